#!/usr/bin/python3
"""Runs the reference Qwen-Image transformer on one training batch and writes what the worker must reproduce.

  run_qwen_image_reference.py MODEL_DIR INPUT.safetensors OUTPUT.safetensors [--grads NAME,NAME,...]
                              [--dtype float32|float64]

MODEL_DIR is a transformer folder (config.json, diffusion_pytorch_model.safetensors or its sharded index) or a
pipeline folder holding one under transformer/.

INPUT holds latents (B, C, H, W) with H and W even and 4C = in_channels, noise (B, C, H, W), sigmas (B,),
prompt_embeds (B, T, joint_attention_dim) and prompt_mask (B, T) integer or bool (1 token, 0 padding); for an
Edit batch also reference.0, reference.1, ... (B, C, h, w), the reference images' latents in order.

OUTPUT holds output (B, H/2 * W/2, 4C), the transformer's prediction on the packed x_t = (1 - sigma) latents +
sigma noise at timestep sigma (with the references' tokens after it: the prediction for x_t's tokens); target (B, H/2 * W/2, 4C), the packed noise - latents; loss (a scalar, the mean
of (output - target)^2 over every element); temb (B, inner); image_freqs (H/2 * W/2, head_dim/2, 2) and
text_freqs (T, head_dim/2, 2), the rotary (cos, sin) tables (image_freqs over the references' tokens too); and grad.NAME for each --grads name (diffusers'
state-dict names). F32, or F64 with --dtype float64.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen_image  # noqa: E402
import safetensors_io  # noqa: E402

FLOAT_INPUTS = ("latents", "noise", "sigmas", "prompt_embeds")
INPUTS = FLOAT_INPUTS + ("prompt_mask",)


def read_inputs(path, dtype):
    tensors = safetensors_io.load(path)
    references = []
    while f"reference.{len(references)}" in tensors:
        references.append(tensors.pop(f"reference.{len(references)}"))
    unknown = sorted(set(tensors) - set(INPUTS))
    if unknown:
        raise qwen_image.InputError(f"{path}: unknown tensors {unknown}; expected {list(INPUTS)}")
    missing = [n for n in INPUTS if n not in tensors]
    if missing:
        raise qwen_image.InputError(f"{path}: missing tensors {missing}")
    for name in FLOAT_INPUTS:
        if not tensors[name].is_floating_point():
            raise qwen_image.InputError(f"{path}: {name} must be floating point, not {tensors[name].dtype}")
    mask = tensors["prompt_mask"]
    if mask.is_floating_point() or mask.is_complex():
        raise qwen_image.InputError(f"{path}: prompt_mask must be integer or bool, not {mask.dtype}")
    if mask.numel() and not ((mask == 0) | (mask == 1)).all():
        raise qwen_image.InputError(f"{path}: prompt_mask holds values other than 0 and 1")
    if mask.dim() != 2 or mask.shape != tensors["prompt_embeds"].shape[:2]:
        raise qwen_image.InputError(f"{path}: prompt_mask {list(mask.shape)} must be (B, T) of prompt_embeds "
                                    f"{list(tensors['prompt_embeds'].shape)}")
    out = {name: tensors[name].to(dtype) for name in FLOAT_INPUTS}
    out["prompt_mask"] = mask.to(torch.long)
    for i, r in enumerate(references):
        if not r.is_floating_point():
            raise qwen_image.InputError(f"{path}: reference.{i} must be floating point, not {r.dtype}")
    out["references"] = [r.to(dtype) for r in references]
    return out


def run(args):
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    model = qwen_image.load_model(args.model, dtype)
    inputs = read_inputs(args.input, dtype)
    wanted = [n for n in (args.grads or "").split(",") if n]
    try:
        model.requires_grad(wanted)
    except qwen_image.InputError as e:
        raise qwen_image.InputError(f"--grads: {e}") from e
    out = qwen_image.flow_matching_loss(model, inputs["latents"], inputs["noise"], inputs["sigmas"],
                                        inputs["prompt_embeds"], inputs["prompt_mask"], inputs["references"])
    if wanted:
        out["loss"].backward()
    result = {"output": out["output"], "target": out["target"], "loss": out["loss"], "temb": out["temb"],
              "image_freqs": qwen_image.rope_table(out["image_angles"]),
              "text_freqs": qwen_image.rope_table(out["text_angles"])}
    for name in wanted:
        result[f"grad.{name}"] = model.params[name].grad
    metadata = {"class": qwen_image.CLASS_NAME, "dtype": args.dtype}
    safetensors_io.save(args.output, {k: v.detach().to(dtype) for k, v in result.items()}, metadata)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--grads", help="comma-separated parameter names, as in the state dict")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = p.parse_args(argv)
    try:
        run(args)
    except (qwen_image.ConfigError, qwen_image.InputError, safetensors_io.FormatError, ValueError, OSError,
            KeyError) as e:
        sys.stderr.write(f"run_qwen_image_reference: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
