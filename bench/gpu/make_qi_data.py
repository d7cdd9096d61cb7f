#!/usr/bin/env python3
"""Writes the inputs of the Qwen-Image LoRA comparison, read by both sides of it.

    python3 bench/gpu/make_qi_data.py [OUT] [--side 128] [--text-dim 3584] [--lengths 96,128,160,112]

OUT (default build/qi-bench/latents) becomes a folder of latent shards as Parallax's data.kind =
"latents" reads them (docs/spec.md): one file, shard-00000.safetensors, holding for each sample
`sampleI.latents` (16, side, side) and `sampleI.prompt_embeds` (L_i, text_dim), both bf16 drawn from
N(0, 1) with torch's CPU generator seeded by --seed, sample after sample, latents before prompt.

The defaults are a 1024 x 1024 image (latent side 128: 64 x 64 = 4096 packed tokens) and prompts of
96, 128, 160 and 112 states of Qwen2.5-VL-7B's width (3584), four samples: one optimizer step of the
spec bench/gpu/specs/qwen_image-20b-lora-1gpu.toml (global_batch 4, micro_batch 1), which
bench/gpu/hf_qwen_image.py reads too. The file is 4 x (16 x 128 x 128 + L x 3584) x 2 bytes, about
5.4 MB. `--side 12 --text-dim 48` makes data for the tiny preset.

Only torch is needed (any version with bfloat16); the file is written without the safetensors package.
"""

import argparse
import json
import os
import struct

import torch


def sample_tensors(side, text_dim, lengths, seed):
    """[(name, tensor)] in the order they are drawn and stored."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i, length in enumerate(lengths):
        latents = torch.randn(16, side, side, generator=gen, dtype=torch.float32).to(torch.bfloat16)
        prompt = torch.randn(length, text_dim, generator=gen, dtype=torch.float32).to(torch.bfloat16)
        out += [(f"sample{i}.latents", latents), (f"sample{i}.prompt_embeds", prompt)]
    return out


def write_safetensors(path, items):
    """A safetensors file of bf16 tensors: the length of the header, the JSON header, the data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in items:
        data = t.contiguous().view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            f.write(blob)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default="build/qi-bench/latents")
    ap.add_argument("--side", type=int, default=128, help="latent side (an image's side / 8); even")
    ap.add_argument("--text-dim", type=int, default=3584, help="width of the prompt states (model.text_dim)")
    ap.add_argument("--lengths", default="96,128,160,112", help="prompt states of each sample, comma-separated")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",") if x.strip()]
    if args.side < 2 or args.side % 2 or not lengths or min(lengths) < 1:
        ap.error("--side must be even and at least 2, and every prompt length at least 1")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "shard-00000.safetensors")
    size = write_safetensors(path, sample_tensors(args.side, args.text_dim, lengths, args.seed))
    print(json.dumps({"file": path, "samples": len(lengths), "latents": [16, args.side, args.side],
                      "prompt_lengths": lengths, "text_dim": args.text_dim, "bytes": size}))


if __name__ == "__main__":
    main()
