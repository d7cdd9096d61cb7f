#!/usr/bin/python3
"""Writes a tiny random-weight Qwen2.5-VL or Qwen2 folder in the published layout, deterministically.

  make_tiny_checkpoint.py OUT_DIR [--kind qwen2_5_vl|qwen2] [--config-shape flat|nested]
                          [--layout legacy|current] [--max-shard-size BYTES] [--untied] [--seed N]
                          [--dtype F32|BF16|F16] [--vocab-size N]

The tiny configuration (TINY_TEXT, TINY_VISION) is the one the project's tests use: text hidden 64, 2 layers,
4 heads over 2 key/value heads (head_dim 16, mrope_section [2, 3, 3]), SwiGLU 128; vision depth 2 (block 1
full attention, block 0 window attention over the published 112-pixel windows), hidden 32, 2 heads, patch 14,
merge 2, out_hidden 64.

The vocabulary keeps Qwen's real token ids (151,936 rows, the published 3B size) so that Qwen's own tokenizer
feeds it: 9.7 M embedding values, 38.9 MB in F32, the head tied by default (one copy). --vocab-size N below
151,665 moves the 22 special tokens (151643..151664) to the last 22 ids instead, for tests that write ids
themselves.

Weights: Linear ~ N(0, 1/fan_in), biases ~ N(0, 0.1^2), norm scales ~ 1 + N(0, 0.1^2), embedding ~ N(0, 0.25^2),
drawn in parameter order from one generator seeded with --seed, so that activations and logits are of
order one and every bias and norm matters.

  flat    text fields at the top level, rope_scaling {"type": "mrope", ...} and rope_theta (the Hub's files)
  nested  text_config with rope_parameters {"rope_type": "default", "rope_theta", "mrope_section"}
  legacy  model.* / visual.* / lm_head.* names (the Hub's files); current: model.language_model.* / model.visual.*
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2_5_vl  # noqa: E402
import qwen_config  # noqa: E402
import safetensors_io  # noqa: E402

QWEN_VOCAB = 151936
FIRST_SPECIAL, SPECIALS = 151643, 22
TINY_TEXT = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "max_position_embeddings": 32768, "hidden_act": "silu",
    "initializer_range": 0.02, "attention_dropout": 0.0, "use_sliding_window": False, "sliding_window": 32768,
    "max_window_layers": 2, "use_cache": True,
}
MROPE_SECTION = [2, 3, 3]
ROPE_THETA = 1000000.0
TINY_VISION = {
    "depth": 2, "hidden_act": "silu", "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
    "out_hidden_size": 64, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
    "window_size": 112, "fullatt_block_indexes": [1], "tokens_per_second": 2,
}
DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def special_id(vocab, qwen_id):
    """Qwen's id for a special token, or its place among the last 22 ids of a smaller vocabulary."""
    return qwen_id if vocab > FIRST_SPECIAL + SPECIALS - 1 else vocab - SPECIALS + (qwen_id - FIRST_SPECIAL)


def token_ids(vocab):
    names = {"bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652,
             "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655,
             "video_token_id": 151656}
    return {k: special_id(vocab, v) for k, v in names.items()}


def vl_config(shape, vocab, tied, dtype):
    ids = token_ids(vocab)
    top = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
           "torch_dtype": dtype, **ids}
    text = dict(TINY_TEXT, vocab_size=vocab, tie_word_embeddings=tied)
    if shape == "flat":
        vision = dict(TINY_VISION, in_chans=3, spatial_patch_size=14)
        return {**top, **text, "rope_theta": ROPE_THETA,
                "rope_scaling": {"type": "mrope", "mrope_section": MROPE_SECTION}, "vision_config": vision}
    text.update(model_type="qwen2_5_vl_text", layer_types=["full_attention"] * text["num_hidden_layers"],
                bos_token_id=ids["bos_token_id"], eos_token_id=ids["eos_token_id"],
                rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA, "mrope_section": MROPE_SECTION})
    vision = dict(TINY_VISION, in_channels=3, model_type="qwen2_5_vl", initializer_range=0.02)
    return {**top, "tie_word_embeddings": tied, "text_config": text, "vision_config": vision}


def qwen2_config(shape, vocab, tied, dtype):
    ids = token_ids(vocab)
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "torch_dtype": dtype,
           "bos_token_id": ids["bos_token_id"], "eos_token_id": ids["bos_token_id"],
           **TINY_TEXT, "vocab_size": vocab, "tie_word_embeddings": tied}
    if shape == "flat":
        cfg["rope_theta"] = ROPE_THETA
    else:
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": ROPE_THETA}
    return cfg


def fill(model, seed):
    """Every parameter drawn in module order from one seeded generator (see the module's text)."""
    g = torch.Generator().manual_seed(seed)
    embedding = model.text_model.embed_tokens.weight
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if p is embedding:
                p.copy_(noise * 0.25)
            elif name.endswith(".bias"):
                p.copy_(noise * 0.1)
            elif p.dim() == 1:
                p.copy_(1 + noise * 0.1)
            else:
                p.copy_(noise / p[0].numel() ** 0.5)


def write(folder, kind="qwen2_5_vl", shape="flat", layout="legacy", max_shard_size=5_000_000_000, tied=True,
          seed=0, dtype="F32", vocab=QWEN_VOCAB):
    make = vl_config if kind == "qwen2_5_vl" else qwen2_config
    cfg = make(shape, vocab, tied, {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype])
    model = qwen2_5_vl.CausalLM(qwen_config.parse(cfg, "tiny config"))
    fill(model, seed)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    tensors = {name: p.detach().to(DTYPES[dtype]) for name, p in qwen2_5_vl.state_dict_in_layout(model, layout).items()}
    safetensors_io.save_folder(folder, tensors, max_shard_size)
    return model


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder")
    p.add_argument("--kind", choices=["qwen2_5_vl", "qwen2"], default="qwen2_5_vl")
    p.add_argument("--config-shape", choices=["flat", "nested"], default="flat")
    p.add_argument("--layout", choices=["legacy", "current"], default="legacy")
    p.add_argument("--max-shard-size", type=int, default=5_000_000_000)
    p.add_argument("--untied", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="F32")
    p.add_argument("--vocab-size", type=int, default=QWEN_VOCAB)
    a = p.parse_args(argv)
    if a.vocab_size < SPECIALS + 1:
        p.error(f"--vocab-size must be above {SPECIALS}")
    write(a.folder, a.kind, a.config_shape, a.layout, a.max_shard_size, not a.untied, a.seed, a.dtype, a.vocab_size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
