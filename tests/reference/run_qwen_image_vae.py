#!/usr/bin/python3
"""Runs the reference Qwen-Image VAE on a batch and writes what the worker must reproduce.

  run_qwen_image_vae.py MODEL_DIR INPUT.safetensors OUTPUT.safetensors [--decode | --train KL_WEIGHT]
                        [--grads NAME,NAME,...] [--dtype float32|float64]

MODEL_DIR is a VAE folder (config.json, diffusion_pytorch_model.safetensors or its sharded index) or a pipeline
folder holding one under vae/.

Encoding (the default): INPUT holds images (B, C, H, W) float in [-1, 1], C = input_channels (3), H and W
multiples of the spatial ratio (8), and optionally noise (B, z_dim, H/8, W/8). OUTPUT holds mean and logvar
(B, z_dim, H/8, W/8), the posterior (logvar clamped to [-30, 20]), and latents, the normalised mean
(mean - latents_mean) / latents_std that the transformer trains on; with noise also sample = mean +
exp(logvar / 2) * noise and sample_latents, its normalised form (what the trainers draw). Videos
(B, C, T, H, W) with T = 1 + 4k give (B, z_dim, 1 + k, h, w).

Decoding (--decode): INPUT holds latents (B, z_dim, h, w), normalised; OUTPUT holds images (B, C, 8h, 8w), the
decoder's output on latents * latents_std + latents_mean, clamped to [-1, 1]. Latent videos (B, z_dim, T, h, w)
give (B, C, 1 + 4(T - 1), 8h, 8w).

Training (--train KL_WEIGHT): INPUT holds images and noise (shaped as the latents); OUTPUT holds loss,
reconstruction and kl (scalars) of the VAE's own training objective (QwenImageVAE.training_loss).

--grads: grad.NAME for each name (diffusers' state-dict names) of the sum of every element of every output
tensor above (with --train, of loss alone). F32, or F64 with --dtype float64.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen_image_vae as vae  # noqa: E402
import safetensors_io  # noqa: E402


def read_inputs(path, allowed, required):
    tensors = safetensors_io.load(path)
    unknown = sorted(set(tensors) - set(allowed))
    if unknown:
        raise vae.InputError(f"{path}: unknown tensors {unknown}; expected {list(allowed)}")
    missing = [n for n in required if n not in tensors]
    if missing:
        raise vae.InputError(f"{path}: missing tensors {missing}")
    for name, t in tensors.items():
        if not t.is_floating_point():
            raise vae.InputError(f"{path}: {name} must be floating point, not {t.dtype}")
    return tensors


def encode(model, path, dtype):
    inputs = read_inputs(path, ("images", "noise"), ("images",))
    mean, logvar = model.encode(inputs["images"].to(dtype))
    out = {"mean": mean, "logvar": logvar, "latents": model.normalize(mean)}
    if "noise" in inputs:
        noise = inputs["noise"].to(dtype)
        if noise.shape != mean.shape:
            raise vae.InputError(f"{path}: noise {list(noise.shape)} must be shaped as the latents "
                                 f"{list(mean.shape)}")
        out["sample"] = model.sample(mean, logvar, noise)
        out["sample_latents"] = model.normalize(out["sample"])
    return out


def decode(model, path, dtype):
    inputs = read_inputs(path, ("latents",), ("latents",))
    return {"images": model.decode(inputs["latents"].to(dtype))}


def train(model, path, dtype, kl_weight):
    inputs = read_inputs(path, ("images", "noise"), ("images", "noise"))
    loss, reconstruction, kl = model.training_loss(inputs["images"].to(dtype), inputs["noise"].to(dtype), kl_weight)
    return {"loss": loss, "reconstruction": reconstruction, "kl": kl}


def run(args):
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    model = vae.load_vae(args.model, dtype)
    wanted = [n for n in (args.grads or "").split(",") if n]
    try:
        model.requires_grad(wanted)
    except vae.InputError as e:
        raise vae.InputError(f"--grads: {e}") from e
    if args.train is not None:
        result = train(model, args.input, dtype, args.train)
        total = result["loss"]
    else:
        result = (decode if args.decode else encode)(model, args.input, dtype)
        total = sum(t.sum() for t in result.values())
    if total.requires_grad:  # not when every named tensor is unused (time convolutions on one frame)
        total.backward()
    for name in wanted:
        grad = model.params[name].grad
        result[f"grad.{name}"] = torch.zeros_like(model.params[name]) if grad is None else grad
    mode = "train" if args.train is not None else "decode" if args.decode else "encode"
    metadata = {"class": vae.CLASS_NAME, "dtype": args.dtype, "mode": mode}
    safetensors_io.save(args.output, {k: v.detach().to(dtype) for k, v in result.items()}, metadata)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--decode", action="store_true", help="latents in, images out (default: images in)")
    p.add_argument("--train", type=float, metavar="KL_WEIGHT",
                   help="images and noise in, the training objective's loss, reconstruction and kl out")
    p.add_argument("--grads", help="comma-separated parameter names, as in the state dict")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = p.parse_args(argv)
    try:
        run(args)
    except (vae.ConfigError, vae.InputError, safetensors_io.FormatError, ValueError, OSError, KeyError) as e:
        sys.stderr.write(f"run_qwen_image_vae: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
