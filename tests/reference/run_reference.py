#!/usr/bin/python3
"""Runs the reference model on one batch and writes what the worker must reproduce.

  run_reference.py MODEL_DIR INPUT.safetensors OUTPUT.safetensors [--grads NAME,NAME,...]
                   [--lora R,ALPHA,TARGET,TARGET,... | --lora R,ALPHA --lora-regex PATTERN] [--rslora]
                   [--lora-init ADAPTER] [--lora-keys current|legacy] [--lora-seed N] [--lora-b-std X]
                   [--lr LR] [--weight-decay WD] [--save-adapter DIR] [--dtype float32|float64]

INPUT holds input_ids (B, T) and optionally attention_mask (B, T; 1 = token, 0 = padding), labels (B, T; -100 =
no loss), pixel_values (N, 1176) with image_grid_thw (images, 3), position_ids ((3, B, T) or (B, T)).

OUTPUT holds logits (B, T, V), position_ids, image_features (when images), loss (a scalar, the mean over the
labels that are not -100) when labels are given, and grad.NAME for each --grads name (names as in the
checkpoint's files; either published layout is accepted).

With LoRA (PEFT's mathematics, see lora.py) the base model is frozen and OUTPUT also holds, per targeted
Linear, lora.KEY (the weights used), grad.KEY, and updated.KEY after one AdamW step (betas 0.9/0.999, eps 1e-8,
no clipping), KEY being PEFT's base_model.model.<path>.lora_A.weight / lora_B.weight. --lora-init reads the
weights (and, from a PEFT folder, r, alpha, rslora and targets) instead of drawing them.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lora as lora_mod  # noqa: E402
import qwen2_5_vl  # noqa: E402
import qwen_config  # noqa: E402
import safetensors_io  # noqa: E402

INPUTS = {"input_ids": torch.long, "attention_mask": torch.long, "labels": torch.long, "pixel_values": None,
          "image_grid_thw": torch.long, "position_ids": torch.long}


def read_inputs(path, dtype):
    tensors = safetensors_io.load(path)
    unknown = sorted(set(tensors) - set(INPUTS))
    if unknown:
        raise qwen2_5_vl.InputError(f"{path}: unknown tensors {unknown}; expected some of {sorted(INPUTS)}")
    if "input_ids" not in tensors:
        raise qwen2_5_vl.InputError(f"{path}: input_ids is missing")
    return {k: v.to(INPUTS[k] or dtype) for k, v in tensors.items()}


def lora_settings(args):
    """(r, alpha, targets, rslora, tensors or None) from --lora / --lora-regex / --lora-init."""
    config, tensors = (None, None)
    if args.lora_init:
        config, tensors = lora_mod.read_adapter(args.lora_init)
    if args.lora:
        parts = args.lora.split(",")
        if len(parts) < 2 or (len(parts) == 2 and not args.lora_regex):
            raise ValueError("--lora is R,ALPHA,TARGET[,TARGET...] (or R,ALPHA with --lora-regex)")
        targets = args.lora_regex if args.lora_regex else parts[2:]
        return int(parts[0]), float(parts[1]), targets, args.rslora, tensors
    if config is None:
        raise ValueError("--lora-init without --lora must name a PEFT folder with adapter_config.json")
    return (int(config["r"]), float(config["lora_alpha"]), config["target_modules"],
            bool(config.get("use_rslora", False)), tensors)


def grad_names(model, layout, names):
    """--grads names (either layout) -> {name as written: parameter}."""
    params = dict(model.named_parameters())
    out = {}
    for name in names:
        internal = name
        for lay in ("legacy", "current"):
            if internal not in params:
                internal = qwen2_5_vl.to_internal(model.cfg.kind, name, lay)
        if internal not in params:
            tied = name.endswith("lm_head.weight") and model.cfg.text.tie_word_embeddings
            hint = " (the head is tied: ask for the embedding)" if tied else ""
            raise ValueError(f"--grads: {name} is not a parameter of this model{hint}")
        out[qwen2_5_vl.to_layout(model.cfg.kind, internal, layout)] = params[internal]
    return out


def run(args):
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    model, layout = qwen2_5_vl.load_model(args.model, dtype)
    inputs = read_inputs(args.input, dtype)
    wanted = grad_names(model, layout, [n for n in (args.grads or "").split(",") if n])
    adapter = None
    if args.lora or args.lora_init:
        r, alpha, targets, rslora, tensors = lora_settings(args)
        keys = args.lora_keys or (lora_mod.key_layout_of(tensors) if tensors else "current")
        adapter = lora_mod.Lora(model, r, alpha, targets, rslora, keys, args.lora_seed, args.lora_b_std)
        if tensors is not None:
            adapter.load(tensors, args.lora_init)
    for p in model.parameters():
        p.requires_grad_(False)
    for p in wanted.values():
        p.requires_grad_(True)
    out = model(**inputs)
    result = {"logits": out["logits"], "hidden": out["hidden"], "position_ids": out["position_ids"]}
    if "image_features" in out:
        result["image_features"] = out["image_features"]
    metadata = {"kind": model.cfg.kind, "layout": layout}
    if "loss" in out:
        result["loss"] = out["loss"]
        if wanted or adapter:
            out["loss"].backward()
    elif wanted or adapter:
        raise qwen2_5_vl.InputError(f"{args.input}: gradients need labels")
    for name, p in wanted.items():
        result[f"grad.{name}"] = p.grad
    if adapter is not None:
        metadata.update(lora_scaling=repr(adapter.scaling), lora_targets=json.dumps(adapter.targets))
        for key, p in adapter.state_dict().items():
            result[f"lora.{key}"] = p.detach().clone()
            result[f"grad.{key}"] = p.grad
        if args.save_adapter:
            adapter.save(args.save_adapter, os.path.abspath(args.model))
        lora_mod.adamw_step(adapter.parameters(), args.lr, weight_decay=args.weight_decay)
        for key, p in adapter.state_dict().items():
            result[f"updated.{key}"] = p
    out_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    safetensors_io.save(args.output, {k: (v.detach().to(out_dtype) if v.is_floating_point() else v)
                                      for k, v in result.items()}, metadata)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--grads", help="comma-separated parameter names")
    p.add_argument("--lora", help="R,ALPHA,TARGET[,TARGET...]")
    p.add_argument("--lora-regex", help="targets as one regular expression over module paths")
    p.add_argument("--rslora", action="store_true")
    p.add_argument("--lora-init", help="PEFT adapter folder or adapter_model.safetensors")
    p.add_argument("--lora-keys", choices=["current", "legacy"])
    p.add_argument("--lora-seed", type=int, default=0)
    p.add_argument("--lora-b-std", type=float, default=0.0, help="draw B ~ N(0, std^2) instead of zeros")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--save-adapter", help="write the adapter used (before the step) as a PEFT folder")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = p.parse_args(argv)
    try:
        run(args)
    except (qwen_config.ConfigError, qwen2_5_vl.InputError, safetensors_io.FormatError, ValueError, OSError,
            KeyError) as e:
        sys.stderr.write(f"run_reference: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
