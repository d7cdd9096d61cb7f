#!/usr/bin/python3
"""Writes a tiny random-weight Qwen-Image VAE folder (AutoencoderKLQwenImage) in diffusers' layout,
deterministically.

  make_tiny_qwen_image_vae.py OUT_DIR [--seed N] [--pipeline] [--max-shard-size BYTES] [--dtype F32|BF16]

The tiny configuration (TINY) keeps the published structure at a fraction of the width: base_dim 8, z_dim 16
(the transformer reads 16 channels), dim_mult [1, 2, 4, 4] (three downsamplings: 8x spatial compression),
temperal_downsample [false, true, true] (the time convolutions exist and run for videos), num_res_blocks 1,
attn_scales [] (the mid blocks still hold their attention).

OUT_DIR gets config.json and diffusion_pytorch_model.safetensors, or diffusion_pytorch_model-0000i-of-0000n
shards with diffusion_pytorch_model.safetensors.index.json when the tensors pass --max-shard-size. With
--pipeline the VAE goes to OUT_DIR/vae/ and OUT_DIR/model_index.json lists it: an existing model_index.json
keeps its other entries, so that this can follow make_tiny_qwen_image.py --pipeline into the same folder (that
tool rewrites model_index.json, so it goes first).

latents_mean ~ N(0, 0.5^2) and latents_std ~ U(0.5, 3), rounded to 4 decimals as the published config lists
them, come first from one generator seeded with --seed; then the weights in state-dict order: convolutions
~ N(0, 1/fan_in), biases ~ N(0, 0.1^2), norm gammas ~ 1 + N(0, 0.1^2), so that activations are of order one and
decoded images mostly stay inside the [-1, 1] clamp.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_tiny_qwen_image  # noqa: E402
import qwen_image_vae as vae  # noqa: E402

DIFFUSERS_VERSION = make_tiny_qwen_image.DIFFUSERS_VERSION
TINY = {"base_dim": 8, "z_dim": 16, "dim_mult": [1, 2, 4, 4], "num_res_blocks": 1, "attn_scales": [],
        "temperal_downsample": [False, True, True], "dropout": 0.0}
DTYPES = make_tiny_qwen_image.DTYPES
PIPELINE_ENTRY = ["diffusers", vae.CLASS_NAME]


def config(seed=0):
    g = torch.Generator().manual_seed(seed)
    z = TINY["z_dim"]
    mean = torch.randn(z, generator=g, dtype=torch.float64) * 0.5
    std = 0.5 + 2.5 * torch.rand(z, generator=g, dtype=torch.float64)
    return {"_class_name": vae.CLASS_NAME, "_diffusers_version": DIFFUSERS_VERSION, **TINY,
            "latents_mean": [round(v, 4) for v in mean.tolist()], "latents_std": [round(v, 4) for v in std.tolist()]}


def draw(cfg, seed=0):
    """{name: fp32 tensor} in state-dict order, as the module's text describes (the generator continues after
    the latent statistics)."""
    g = torch.Generator().manual_seed(seed)
    torch.randn(cfg.z_dim, generator=g, dtype=torch.float64)
    torch.rand(cfg.z_dim, generator=g, dtype=torch.float64)
    params = {}
    for name, shape in vae.parameter_shapes(cfg).items():
        noise = torch.randn(shape, generator=g, dtype=torch.float32)
        if name.endswith(".bias"):
            params[name] = noise * 0.1
        elif name.endswith(".gamma"):
            params[name] = 1 + noise * 0.1
        else:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            params[name] = noise / fan_in ** 0.5
    return params


def tiny_model(seed=0, dtype=torch.float32):
    cfg = vae.parse_config(config(seed), "tiny config")
    return vae.QwenImageVAE(cfg, draw(cfg, seed)).to(dtype)


def add_to_pipeline(folder):
    """OUT_DIR/model_index.json with the vae entry, other entries kept."""
    path = os.path.join(folder, "model_index.json")
    index = {"_class_name": "QwenImagePipeline", "_diffusers_version": DIFFUSERS_VERSION}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
        if not isinstance(index, dict):
            raise SystemExit(f"{path}: not a JSON object; remove it or pick another folder")
    index["vae"] = PIPELINE_ENTRY
    make_tiny_qwen_image.write_json(path, index)


def write(folder, seed=0, pipeline=False, max_shard_size=10_000_000_000, dtype="F32"):
    """Writes the folder; returns the model in float32 as drawn (before any BF16 rounding)."""
    model = tiny_model(seed)
    target = folder
    if pipeline:
        os.makedirs(folder, exist_ok=True)
        add_to_pipeline(folder)
        target = os.path.join(folder, "vae")
    os.makedirs(target, exist_ok=True)
    make_tiny_qwen_image.write_json(os.path.join(target, "config.json"), config(seed))
    make_tiny_qwen_image.save_weights(target, {k: v.to(DTYPES[dtype]) for k, v in model.params.items()},
                                      max_shard_size)
    return model


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--pipeline", action="store_true")
    p.add_argument("--max-shard-size", type=int, default=10_000_000_000)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="F32")
    a = p.parse_args(argv)
    if a.max_shard_size < 1:
        p.error("--max-shard-size must be positive")
    write(a.folder, a.seed, a.pipeline, a.max_shard_size, a.dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
