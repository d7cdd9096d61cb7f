"""One Linear with a LoRA adapter read from a PEFT folder, as lora.py (PEFT's mathematics) computes it.

usage: lora_layer.py ADAPTER_DIR INPUT.safetensors OUTPUT.safetensors

ADAPTER_DIR is a PEFT folder (adapter_config.json, adapter_model.safetensors) whose one target is the module
"layer": keys base_model.model.layer.lora_A.weight (r, in) and .lora_B.weight (out, r). r, lora_alpha,
use_rslora and target_modules come from its config.
INPUT holds weight (out, in), optional bias (out), x (..., in) and dy (..., out).
OUTPUT (F32) holds y = layer(x) with the adapter, grad.x, grad.lora_A, grad.lora_B of sum(y * dy) (the base
frozen), and merged_weight: W + scaling * B A as lora.py's merge leaves it, with merged_y = x W'^T + b.
Exits 77 when this interpreter has no torch; 1 with the file or field named on bad input.
"""
import sys
import types

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("no torch in this interpreter", file=sys.stderr)
    sys.exit(77)

import lora
import safetensors_io


class OneLayer(nn.Module):
    """A model with one Linear at the path "layer" (lora.Lora reads model.cfg.kind for its key layout)."""

    def __init__(self, weight, bias):
        super().__init__()
        self.cfg = types.SimpleNamespace(kind="linear")
        self.layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
        with torch.no_grad():
            self.layer.weight.copy_(weight)
            if bias is not None:
                self.layer.bias.copy_(bias)
        for p in self.parameters():
            p.requires_grad_(False)


def main(adapter_dir, input_path, output_path):
    config, tensors = lora.read_adapter(adapter_dir)
    batch = safetensors_io.load(input_path)
    for name in ("weight", "x", "dy"):
        if name not in batch:
            raise ValueError(f"{input_path}: no tensor {name}")
    model = OneLayer(batch["weight"].float(), batch["bias"].float() if "bias" in batch else None)
    adapter = lora.Lora(model, int(config["r"]), float(config["lora_alpha"]), config["target_modules"],
                        bool(config.get("use_rslora", False)))
    adapter.load(tensors, adapter_dir)
    for p in adapter.parameters():
        p.requires_grad_(True)
    x = batch["x"].float().requires_grad_(True)
    y = model.layer(x)
    (y * batch["dy"].float()).sum().backward()
    (key_a, key_b, pair), = list(adapter.keys())
    out = {"y": y.detach(), "grad.x": x.grad, "grad.lora_A": pair[0].weight.grad, "grad.lora_B": pair[1].weight.grad}
    adapter.merge()
    with torch.no_grad():
        out["merged_weight"] = model.layer.weight.detach().clone()
        out["merged_y"] = model.layer(x.detach())
    safetensors_io.save(output_path, {k: v.contiguous() for k, v in out.items()},
                        {"scaling": repr(adapter.scaling)})


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        main(*sys.argv[1:])
    except (ValueError, KeyError, OSError, safetensors_io.FormatError) as e:
        print(f"lora_layer.py: {e}", file=sys.stderr)
        sys.exit(1)
