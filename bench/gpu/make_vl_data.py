#!/usr/bin/env python3
"""Writes the inputs of the Qwen2.5-VL-7B LoRA comparison, read by both sides of it.

    python3 bench/gpu/make_vl_data.py OUT --tokenizer TOKENIZER_JSON [--weights random|sparse]

OUT/qwen2_5_vl-7b/   a model folder as Qwen2.5-VL-7B-Instruct is published: its config.json (the
                     published sizes: text 28 x 3584, 28 heads over 4 key/value heads, SwiGLU 18944,
                     vocabulary 152064, untied head, M-RoPE [16, 24, 24], rope_theta 1e6; tower 32 x
                     1280, 16 heads, MLP 3420, windows of 112 pixels, full attention in blocks 7, 15,
                     23, 31, merger to 3584), Qwen's tokenizer.json, and bf16 weights in the Hub's
                     names (model.*, visual.*, lm_head.*) in shards of at most 5 GB with their index.
                     `random`: N(0, 0.02) matrices and embeddings, zero biases, unit norm scales
                     (transformers' initialization), drawn from --seed on the GPU when there is one.
                     `sparse`: the same files with every value zero and no disk space taken (a spec
                     can be checked against the folder without a GPU machine).
OUT/image.png        1120 x 896 RGB = 1,003,520 pixels = 1280 x 28 x 28: at data.max_pixels =
                     1280 * 28 * 28 smart resize leaves it as it is: 64 x 80 patches of 14, 1280
                     visual tokens.
OUT/chats.jsonl      --samples conversations (ShareGPT messages with an image block): one question
                     about the image and an answer of about 250 words each, different per sample.

The Parallax spec bench/gpu/specs/qwen2_5_vl-7b-lora-1gpu.toml and bench/gpu/hf_qwen2_5_vl.py read
these files (packaging/device/run.sh's vl-lora-compare item makes them under build/vl-bench).
"""

import argparse
import json
import os
import random
import shutil
import struct
import sys
import zlib

TEXT = dict(hidden_size=3584, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
            intermediate_size=18944, vocab_size=152064)
VISION = dict(depth=32, hidden_size=1280, num_heads=16, intermediate_size=3420, out_hidden_size=3584,
              patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
              fullatt_block_indexes=[7, 15, 23, 31])
IMAGE_W, IMAGE_H = 1120, 896
SHARD_BYTES = 5_000_000_000
PARAMETERS_7B = 8_292_166_656  # docs/spec.md's count for qwen2_5_vl 7b


def config():
    """config.json in the shape Qwen2.5-VL-7B-Instruct is published (text fields at the top level)."""
    return {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
        "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
        "vision_start_token_id": 151652, "vision_end_token_id": 151653, "vision_token_id": 151654,
        "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu", "initializer_range": 0.02,
        "max_position_embeddings": 128000, "max_window_layers": 28, "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False, **TEXT,
        "vision_config": dict(VISION, hidden_act="silu", in_chans=3, spatial_patch_size=14, tokens_per_second=2),
        "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    }


def tensors():
    """(name, shape, init) of every parameter, in the published checkpoint's names."""
    c, f, v = TEXT["hidden_size"], TEXT["intermediate_size"], TEXT["vocab_size"]
    kv = TEXT["num_key_value_heads"] * (c // TEXT["num_attention_heads"])
    out = [("model.embed_tokens.weight", [v, c], "normal")]
    for i in range(TEXT["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, rows in (("q_proj", c), ("k_proj", kv), ("v_proj", kv)):
            out += [(p + f"self_attn.{name}.weight", [rows, c], "normal"), (p + f"self_attn.{name}.bias", [rows], "zero")]
        out += [(p + "self_attn.o_proj.weight", [c, c], "normal"),
                (p + "mlp.gate_proj.weight", [f, c], "normal"), (p + "mlp.up_proj.weight", [f, c], "normal"),
                (p + "mlp.down_proj.weight", [c, f], "normal"),
                (p + "input_layernorm.weight", [c], "one"), (p + "post_attention_layernorm.weight", [c], "one")]
    out += [("model.norm.weight", [c], "one"), ("lm_head.weight", [v, c], "normal")]
    cv, fv = VISION["hidden_size"], VISION["intermediate_size"]
    t, s = VISION["temporal_patch_size"], VISION["patch_size"]
    out.append(("visual.patch_embed.proj.weight", [cv, 3, t, s, s], "normal"))
    for i in range(VISION["depth"]):
        p = f"visual.blocks.{i}."
        out += [(p + "norm1.weight", [cv], "one"), (p + "norm2.weight", [cv], "one")]
        for name, rows, cols in (("attn.qkv", 3 * cv, cv), ("attn.proj", cv, cv), ("mlp.gate_proj", fv, cv),
                                 ("mlp.up_proj", fv, cv), ("mlp.down_proj", cv, fv)):
            out += [(p + name + ".weight", [rows, cols], "normal"), (p + name + ".bias", [rows], "zero")]
    merged = cv * VISION["spatial_merge_size"] ** 2
    out += [("visual.merger.ln_q.weight", [cv], "one"),
            ("visual.merger.mlp.0.weight", [merged, merged], "normal"), ("visual.merger.mlp.0.bias", [merged], "zero"),
            ("visual.merger.mlp.2.weight", [VISION["out_hidden_size"], merged], "normal"),
            ("visual.merger.mlp.2.bias", [VISION["out_hidden_size"]], "zero")]
    return out


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def shards(items):
    """The tensors split into runs of at most SHARD_BYTES (bf16), in order."""
    groups, size = [[]], 0
    for item in items:
        nbytes = 2 * count(item[1])
        if groups[-1] and size + nbytes > SHARD_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += nbytes
    return groups


def header(group):
    entries, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in group:
        end = offset + 2 * count(shape)
        entries[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, end]}
        offset = end
    text = json.dumps(entries, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, offset


def write_weights(folder, mode, seed):
    items = tensors()
    total = sum(count(s) for _, s, _ in items)
    if total != PARAMETERS_7B:
        sys.exit(f"make_vl_data: {total:,} parameters, but Qwen2.5-VL-7B has {PARAMETERS_7B:,}")
    draw = None
    if mode == "random":
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        gen = torch.Generator(device=device).manual_seed(seed)

        def draw(shape, init):
            if init == "zero":
                t = torch.zeros(shape, dtype=torch.bfloat16, device=device)
            elif init == "one":
                t = torch.ones(shape, dtype=torch.bfloat16, device=device)
            else:
                t = (torch.randn(shape, generator=gen, device=device, dtype=torch.float32) * 0.02).to(torch.bfloat16)
            return t.cpu().contiguous().view(torch.int16).numpy()
    groups = shards(items)
    weight_map, size = {}, 0
    for i, group in enumerate(groups):
        name = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        head, data = header(group)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(head)
            if draw is None:
                f.truncate(len(head) + data)
            else:
                for tensor, shape, init in group:
                    draw(shape, init).tofile(f)
        for tensor, _, _ in group:
            weight_map[tensor] = name
        size += data
    with open(os.path.join(folder, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": weight_map}, f, indent=1)
    return total, len(groups)


def write_png(path, width, height):
    """A smooth colour field with a grid of darker lines: deterministic, compresses well."""
    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter: none
        for x in range(width):
            line = (x % 112 < 4) or (y % 112 < 4)
            r = (x * 255) // (width - 1)
            g = (y * 255) // (height - 1)
            b = ((x + y) * 127) // (width + height) + 64
            if line:
                r, g, b = r // 3, g // 3, b // 3
            rows += bytes((r, g, b))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(bytes(rows), 6)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


QUESTIONS = ["Describe this image in detail.", "What does the picture show? Explain its layout.",
             "Give a careful description of the colours and shapes in this image.",
             "Look at the image and write a detailed report of what you see."]
SUBJECTS = ["The left side", "The upper half", "The lower right corner", "The centre", "A thin dark line",
            "The background", "Each square of the grid", "The right edge", "The top row", "The colour field"]
VERBS = ["fades from", "moves gradually from", "changes smoothly from", "shifts from", "runs from"]
COLOURS = ["deep blue", "soft green", "warm red", "pale violet", "bright orange", "dark teal", "light grey",
           "muted yellow"]
ENDINGS = ["which gives the picture a calm and even look.", "so that no single region stands out.",
           "while the dark lines divide it into regular squares.", "and the grid keeps the same spacing everywhere.",
           "as if the image were a map of two smooth gradients.", "with no text, people or objects in view."]


def answer(rng, words):
    out = []
    while sum(len(s.split()) for s in out) < words:
        out.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(COLOURS)} to "
                   f"{rng.choice(COLOURS)}, {rng.choice(ENDINGS)}")
    return " ".join(out)


def write_chats(path, samples, seed):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(samples):
            sample = {"messages": [
                {"role": "user", "content": [{"type": "image", "image": "image.png"},
                                             {"type": "text", "text": QUESTIONS[i % len(QUESTIONS)]}]},
                {"role": "assistant", "content": answer(rng, 250)}]}
            f.write(json.dumps(sample) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--tokenizer", required=True, help="Qwen's tokenizer.json (tokenizer_config.json beside it is copied too)")
    ap.add_argument("--weights", choices=["random", "sparse"], default="random")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    folder = os.path.join(args.out, "qwen2_5_vl-7b")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config(), f, indent=2)
    shutil.copyfile(args.tokenizer, os.path.join(folder, "tokenizer.json"))
    beside = os.path.join(os.path.dirname(args.tokenizer), "tokenizer_config.json")
    if os.path.exists(beside):
        shutil.copyfile(beside, os.path.join(folder, "tokenizer_config.json"))
    write_png(os.path.join(args.out, "image.png"), IMAGE_W, IMAGE_H)
    write_chats(os.path.join(args.out, "chats.jsonl"), args.samples, args.seed)
    total, files = write_weights(folder, args.weights, args.seed)
    print(json.dumps({"folder": folder, "parameters": total, "shards": files, "weights": args.weights,
                      "image": [IMAGE_W, IMAGE_H], "samples": args.samples}))


if __name__ == "__main__":
    main()
