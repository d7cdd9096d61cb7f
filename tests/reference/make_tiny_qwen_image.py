#!/usr/bin/python3
"""Writes a tiny random-weight Qwen-Image transformer folder in diffusers' layout, deterministically.

  make_tiny_qwen_image.py OUT_DIR [--seed N] [--layers N] [--pipeline] [--max-shard-size BYTES]
                          [--dtype F32|BF16]

The tiny configuration (TINY) is the one the project's tests use: 2 heads of 32 (inner 64), 2 layers, text
features 48 (joint_attention_dim), axes_dims_rope (8, 12, 12), patch 2, in_channels 64 (16 latent channels
packed 2 x 2), out_channels 16.

OUT_DIR gets config.json and diffusion_pytorch_model.safetensors, or diffusion_pytorch_model-0000i-of-0000n
shards with diffusion_pytorch_model.safetensors.index.json when the tensors pass --max-shard-size. With
--pipeline, OUT_DIR gets model_index.json (QwenImagePipeline) and the transformer goes to OUT_DIR/transformer/;
no other component is written.

Weights: Linear ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2), norm scales ~ 1 + N(0, 0.1^2), drawn in state-dict order
from one generator seeded with --seed, so that every modulation, bias and norm matters (none is zero: a zero
modulation or proj_out would hide the rest) and outputs are of order one.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen_image  # noqa: E402
import safetensors_io  # noqa: E402

DIFFUSERS_VERSION = "0.35.1"
TINY = {"patch_size": 2, "in_channels": 64, "out_channels": 16, "num_layers": 2, "attention_head_dim": 32,
        "num_attention_heads": 2, "joint_attention_dim": 48, "guidance_embeds": False, "axes_dims_rope": [8, 12, 12]}
DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16}


def config(layers=TINY["num_layers"], joint_dim=TINY["joint_attention_dim"]):
    return {"_class_name": qwen_image.CLASS_NAME, "_diffusers_version": DIFFUSERS_VERSION,
            **TINY, "num_layers": layers, "joint_attention_dim": joint_dim}


def draw(cfg, seed=0):
    """{name: fp32 tensor} in state-dict order, as the module's text describes."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in qwen_image.parameter_shapes(cfg).items():
        noise = torch.randn(shape, generator=g, dtype=torch.float32)
        if name.endswith(".bias"):
            params[name] = noise * 0.1
        elif len(shape) == 1:
            params[name] = 1 + noise * 0.1
        else:
            params[name] = noise / shape[1] ** 0.5
    return params


def tiny_model(layers=TINY["num_layers"], seed=0, dtype=torch.float32, joint_dim=TINY["joint_attention_dim"]):
    cfg = qwen_image.parse_config(config(layers, joint_dim), "tiny config")
    return qwen_image.QwenImageTransformer(cfg, draw(cfg, seed)).to(dtype)


def save_weights(folder, tensors, max_shard_size):
    """One diffusion_pytorch_model.safetensors, or shards (huggingface_hub's split) and their index."""
    entries = [safetensors_io.entry(name, t) for name, t in tensors.items()]
    shards = safetensors_io.safetensors_ref.split(entries, max_shard_size)
    stem = qwen_image.WEIGHTS_FILE[:-len(".safetensors")]
    names = ([qwen_image.WEIGHTS_FILE] if len(shards) == 1 else
             [f"{stem}-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))])
    for name, shard in zip(names, shards):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(safetensors_io.safetensors_ref.file_bytes(shard, {"format": "pt"}))
    if len(shards) > 1:
        index = {"metadata": {"total_size": sum(len(e["data"]) for e in entries)},
                 "weight_map": {e["name"]: name for name, shard in zip(names, shards) for e in shard}}
        with open(os.path.join(folder, qwen_image.WEIGHTS_INDEX), "w", encoding="utf-8") as f:
            f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def write(folder, seed=0, layers=TINY["num_layers"], pipeline=False, max_shard_size=10_000_000_000, dtype="F32",
          joint_dim=TINY["joint_attention_dim"]):
    """Writes the folder; returns the model in float32 as drawn (before any BF16 rounding)."""
    model = tiny_model(layers, seed, joint_dim=joint_dim)
    target = folder
    if pipeline:
        os.makedirs(folder, exist_ok=True)
        write_json(os.path.join(folder, "model_index.json"),
                   {"_class_name": "QwenImagePipeline", "_diffusers_version": DIFFUSERS_VERSION,
                    "transformer": ["diffusers", qwen_image.CLASS_NAME]})
        target = os.path.join(folder, "transformer")
    os.makedirs(target, exist_ok=True)
    write_json(os.path.join(target, "config.json"), config(layers, joint_dim))
    save_weights(target, {k: v.to(DTYPES[dtype]) for k, v in model.params.items()}, max_shard_size)
    return model


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=TINY["num_layers"])
    p.add_argument("--pipeline", action="store_true")
    p.add_argument("--max-shard-size", type=int, default=10_000_000_000)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="F32")
    p.add_argument("--joint-dim", type=int, default=TINY["joint_attention_dim"],
                   help="the text encoder's width (64 for the tiny Qwen2.5-VL of make_tiny_checkpoint.py)")
    a = p.parse_args(argv)
    if a.layers < 1:
        p.error("--layers must be at least 1")
    if a.max_shard_size < 1:
        p.error("--max-shard-size must be positive")
    write(a.folder, a.seed, a.layers, a.pipeline, a.max_shard_size, a.dtype, a.joint_dim)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
