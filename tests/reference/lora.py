"""LoRA as PEFT computes it, on the reference model's Linears, without touching the model's own parameter names.

  y = W x + b + scaling * B (A x)      A: (r, in), B: (out, r); scaling = alpha / r, or alpha / sqrt(r) (rslora)
  initial A ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming-uniform with a = sqrt(5)), initial B = 0; dropout 0

Targets follow PEFT's matching over module paths: a list of names matches a module whose path is the name or
ends with "." + name; a single string is a regular expression the whole path must match. Paths are those of
the published model classes, in the chosen layout ("current": model.language_model.*, "legacy": model.*),
and adapter keys are PEFT's: base_model.model.<path>.lora_A.weight / lora_B.weight.
"""
import json
import math
import os
import re

import torch
import torch.nn as nn

import qwen2_5_vl
import safetensors_io

PREFIX = "base_model.model."


def matches(targets, path):
    if isinstance(targets, str):
        return re.fullmatch(targets, path) is not None
    return any(path == t or path.endswith("." + t) for t in targets)


class Lora:
    def __init__(self, model, r, alpha, targets, rslora=False, key_layout="current", seed=0, b_std=0.0):
        if r < 1:
            raise ValueError(f"LoRA rank r = {r} must be at least 1")
        self.model, self.r, self.alpha, self.targets, self.rslora = model, r, alpha, targets, rslora
        self.key_layout = key_layout
        self.scaling = alpha / math.sqrt(r) if rslora else alpha / r
        self.adapters = nn.ModuleDict()  # internal path with "/" for "." -> Sequential(A, B)
        self.paths = {}
        self.hooks = []
        generator = torch.Generator().manual_seed(seed)
        dtype = next(model.parameters()).dtype
        for path, module in model.named_modules():
            if not isinstance(module, nn.Linear):
                continue
            shown = qwen2_5_vl.to_layout(model.cfg.kind, path, key_layout)
            if not matches(targets, shown):
                continue
            a = nn.Linear(module.in_features, r, bias=False).to(dtype)
            b = nn.Linear(r, module.out_features, bias=False).to(dtype)
            with torch.no_grad():
                bound = 1 / math.sqrt(module.in_features)
                a.weight.uniform_(-bound, bound, generator=generator)
                b.weight.normal_(0.0, b_std, generator=generator) if b_std else b.weight.zero_()
            key = path.replace(".", "/")
            self.adapters[key] = nn.Sequential(a, b)
            self.paths[key] = (path, shown)
            self.hooks.append(module.register_forward_hook(self.hook(self.adapters[key])))
        if not self.paths:
            raise ValueError(f"LoRA targets {targets!r} match no Linear of the model")

    def hook(self, adapter):
        scaling = self.scaling

        def add(module, inputs, output):
            return output + adapter(inputs[0]) * scaling
        return add

    def parameters(self):
        return list(self.adapters.parameters())

    def keys(self):
        """(A key, B key, adapter) per targeted Linear, in module order."""
        for key, adapter in self.adapters.items():
            shown = self.paths[key][1]
            yield f"{PREFIX}{shown}.lora_A.weight", f"{PREFIX}{shown}.lora_B.weight", adapter

    def state_dict(self):
        out = {}
        for key_a, key_b, adapter in self.keys():
            out[key_a] = adapter[0].weight
            out[key_b] = adapter[1].weight
        return out

    def load(self, tensors, source):
        expected = self.state_dict()
        missing = sorted(set(expected) - set(tensors))
        extra = sorted(set(tensors) - set(expected))
        if missing or extra:
            raise ValueError(f"{source}: adapter keys do not match the targets: missing {missing[:4]}, "
                             f"unexpected {extra[:4]}")
        with torch.no_grad():
            for key, p in expected.items():
                if tensors[key].shape != p.shape:
                    raise ValueError(f"{source}: {key} has shape {list(tensors[key].shape)}, expected {list(p.shape)}")
                p.copy_(tensors[key].to(p.dtype))

    def merge(self):
        """W += scaling * B A in every targeted Linear, and the adapters removed: the merged model."""
        modules = dict(self.model.named_modules())
        with torch.no_grad():
            for key, adapter in self.adapters.items():
                weight = modules[self.paths[key][0]].weight
                weight += self.scaling * adapter[1].weight @ adapter[0].weight
        self.remove()

    def remove(self):
        for h in self.hooks:
            h.remove()
        self.hooks = []

    def config(self, base_model):
        alpha = int(self.alpha) if float(self.alpha).is_integer() else self.alpha
        return {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": self.r, "lora_alpha": alpha,
                "lora_dropout": 0.0, "use_rslora": self.rslora, "bias": "none", "target_modules": self.targets,
                "base_model_name_or_path": base_model}

    def save(self, folder, base_model):
        """A PEFT adapter folder: adapter_config.json and adapter_model.safetensors."""
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "adapter_config.json"), "w", encoding="utf-8") as f:
            json.dump(self.config(base_model), f, indent=2)
        safetensors_io.save(os.path.join(folder, "adapter_model.safetensors"), self.state_dict(), {"format": "pt"})


def read_adapter(path):
    """(config or None, tensors) of a PEFT folder or of an adapter_model.safetensors file."""
    config = None
    if os.path.isdir(path):
        with open(os.path.join(path, "adapter_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        path = os.path.join(path, "adapter_model.safetensors")
    return config, safetensors_io.load(path)


def key_layout_of(tensors):
    inner = [k[len(PREFIX):] for k in tensors if k.startswith(PREFIX)]
    return qwen2_5_vl.file_layout(inner)


def adamw_step(params, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    """One AdamW step (torch.optim.AdamW, as the published trainers use it) on params with .grad set."""
    optimizer = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    optimizer.step()
