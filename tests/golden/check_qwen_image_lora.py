"""Loads a Qwen-Image LoRA file through diffusers' own loader and records the adapted transformer's output on
one training batch.

usage: python3 check_qwen_image_lora.py BASE_DIR LORA_FILE BATCH.safetensors OUT.safetensors [--alpha A]

Run where diffusers and PEFT import (make_qwen_image_golden.py says where). BASE_DIR is a transformer folder
(QwenImageTransformer2DModel.from_pretrained), LORA_FILE a pytorch_lora_weights.safetensors (or any file
QwenImagePipeline.lora_state_dict reads), BATCH make_qwen_image_golden.py's batch. The adapter goes in as
QwenImagePipeline.load_lora_weights puts it (lora_state_dict, then load_lora_into_transformer with the file's
metadata), without the VAE and text encoder a whole pipeline would load.

OUT holds output (B, P, 4c), the adapted transformer's prediction as make_qwen_image_golden.py computes it,
and loss; its metadata names the versions, the LoRA layers PEFT built and the adapter's scale. Prints one
JSON line with those and, with --alpha, max |a - b| / max |b| between diffusers' output and the base with
W + alpha / r B A merged by hand (the adapter's scale as its trainer meant it). Exits 1 when a tensor of
the file was left out or that difference passes 1e-5.
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qwen_image_golden as golden  # noqa: E402

from diffusers import QwenImageTransformer2DModel  # noqa: E402


def loader():
    if golden.PIPELINE is not None:
        return golden.PIPELINE
    from diffusers.loaders import QwenImageLoraLoaderMixin
    return QwenImageLoraLoaderMixin


def load_base(folder):
    return QwenImageTransformer2DModel.from_pretrained(folder, torch_dtype=torch.float32).eval()


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))


def merged_by_hand(base_dir, lora_file, alpha):
    model = load_base(base_dir)
    lora = load_file(lora_file)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key, a in lora.items():
            if not key.endswith(".lora_A.weight"):
                continue
            module = key[len("transformer."):-len(".lora_A.weight")]
            b = lora[key.replace(".lora_A.", ".lora_B.")]
            params[module + ".weight"] += alpha / a.shape[0] * b @ a
    return model


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base")
    p.add_argument("lora")
    p.add_argument("batch")
    p.add_argument("out")
    p.add_argument("--alpha", type=float)
    a = p.parse_args(argv)
    batch = load_file(a.batch)
    mix = loader()
    state, metadata = mix.lora_state_dict(os.path.dirname(os.path.abspath(a.lora)),
                                          weight_name=os.path.basename(a.lora), return_lora_metadata=True)
    model = load_base(a.base)
    mix.load_lora_into_transformer(state, transformer=model, metadata=metadata)
    lora_layers = [n for n, _ in model.named_modules() if n.endswith("lora_A")]
    loaded = {k: v for k, v in model.state_dict().items() if ".lora_" in k}
    in_file = load_file(a.lora)
    # Each tensor of the file, found in the adapted model under PEFT's adapter name.
    left_out = []
    for key, value in in_file.items():
        if key.endswith(".alpha"):
            continue
        name = key[len("transformer."):].replace(".lora_A.", ".lora_A.default_0.").replace(".lora_B.", ".lora_B.default_0.")
        found = loaded.get(name, loaded.get(name.replace("default_0", "default")))
        if found is None or not torch.equal(found, value):
            left_out.append(key)
    scales = sorted({float(s) for m in model.modules() if hasattr(m, "scaling") for s in m.scaling.values()})
    with torch.no_grad():
        output, _, loss = golden.flow_loss(model, batch)
        base_output, _, _ = golden.flow_loss(load_base(a.base), batch)
    versions = {"torch": torch.__version__, "diffusers": golden.diffusers.__version__,
                "diffusers_commit": golden.DIFFUSERS_COMMIT, "loader": mix.__name__}
    result = dict(versions, lora_layers=len(lora_layers), file_tensors=len(in_file), left_out=left_out[:6],
                  scales=scales, metadata=bool(metadata), base_vs_adapted=rel(base_output, output))
    if a.alpha is not None:
        with torch.no_grad():
            by_hand, _, _ = golden.flow_loss(merged_by_hand(a.base, a.lora, a.alpha), batch)
        result["adapted_vs_merged_by_hand"] = rel(output, by_hand)
    save_file({"output": output.contiguous(), "loss": loss.reshape(())}, a.out,
              {k: json.dumps(v) if not isinstance(v, str) else v for k, v in result.items()})
    print(json.dumps(result))
    ok = not left_out and result.get("adapted_vs_merged_by_hand", 0) < 1e-5
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
