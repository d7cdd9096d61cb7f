#!/usr/bin/python3
"""Runs the reference Qwen-Image sampler (qwen_image_sampler.py) and writes what the worker must reproduce.

  run_qwen_image_sampler.py schedule STEPS TOKENS OUTPUT.safetensors
  run_qwen_image_sampler.py sample PIPELINE_DIR INPUT.safetensors OUTPUT.safetensors --steps N
                            [--guidance G] [--seed S]

schedule: OUTPUT holds sigmas (STEPS + 1,) and timesteps (STEPS,) for an image of TOKENS packed tokens.

sample: PIPELINE_DIR holds transformer/ and vae/ (diffusers layout). INPUT holds prompt_embeds (T, D), optionally
negative_embeds (T', D), and noise (1, 16, h, w), the initial latents, unless --seed draws them as the
pipeline's generator does: torch.randn((1, 1, 16, h, w), generator=torch.Generator().manual_seed(S)), with h
and w given by --height and --width (pixels, multiples of 16). OUTPUT holds noise, sigmas, timesteps, latents
(1, 16, h, w), the final latents, images (1, 3, 8h, 8w) in [-1, 1] from the VAE's decoder, and pixels
(1, 8h, 8w, 3) as float32 holding the uint8 values the image processor gives.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen_image  # noqa: E402
import qwen_image_sampler as sampler  # noqa: E402
import qwen_image_vae  # noqa: E402
import safetensors_io  # noqa: E402


def run_schedule(args):
    sigmas, timesteps = sampler.schedule(args.steps, args.tokens)
    safetensors_io.save(args.output, {"sigmas": sigmas, "timesteps": timesteps}, {"mode": "schedule"})


def initial_noise(inputs, args, channels):
    if args.seed is None:
        if "noise" not in inputs:
            raise qwen_image.InputError(f"{args.input}: no noise, and no --seed to draw it")
        return inputs["noise"].to(torch.float32)
    if args.height is None or args.width is None or args.height % 16 or args.width % 16:
        raise qwen_image.InputError("--seed needs --height and --width, multiples of 16")
    generator = torch.Generator().manual_seed(args.seed)
    shape = (1, 1, channels, args.height // 8, args.width // 8)
    return torch.randn(shape, generator=generator, dtype=torch.float32)[:, 0]


def run_sample(args):
    model = qwen_image.load_model(args.pipeline)
    vae = qwen_image_vae.load_vae(args.pipeline)
    inputs = safetensors_io.load(args.input)
    unknown = sorted(set(inputs) - {"prompt_embeds", "negative_embeds", "noise"})
    if unknown or "prompt_embeds" not in inputs:
        raise qwen_image.InputError(f"{args.input}: needs prompt_embeds; unknown tensors {unknown}")
    noise = initial_noise(inputs, args, model.cfg.in_channels // 4)
    prompt = inputs["prompt_embeds"].to(torch.float32)
    negative = inputs.get("negative_embeds")
    with torch.no_grad():
        latents, sigmas, timesteps = sampler.denoise(model, noise, prompt, negative, args.steps, args.guidance)
        images = vae.decode(latents)
    out = {"noise": noise, "sigmas": sigmas, "timesteps": timesteps, "latents": latents, "images": images,
           "pixels": sampler.to_uint8(images).to(torch.float32)}
    safetensors_io.save(args.output, {k: v.contiguous() for k, v in out.items()}, {"mode": "sample"})


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("schedule")
    s.add_argument("steps", type=int)
    s.add_argument("tokens", type=int)
    s.add_argument("output")
    d = sub.add_parser("sample")
    d.add_argument("pipeline")
    d.add_argument("input")
    d.add_argument("output")
    d.add_argument("--steps", type=int, required=True)
    d.add_argument("--guidance", type=float, default=1.0)
    d.add_argument("--seed", type=int)
    d.add_argument("--height", type=int)
    d.add_argument("--width", type=int)
    args = p.parse_args(argv)
    try:
        (run_schedule if args.mode == "schedule" else run_sample)(args)
    except (qwen_image.ConfigError, qwen_image.InputError, qwen_image_vae.ConfigError, qwen_image_vae.InputError,
            safetensors_io.FormatError, ValueError, OSError, KeyError) as e:
        sys.stderr.write(f"run_qwen_image_sampler: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
