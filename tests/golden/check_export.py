"""Loads what Parallax exports with the stacks people run: a merged Qwen2.5-VL folder through
transformers' from_pretrained, and the run's LoRA adapter folder through PEFT's
PeftModel.from_pretrained on the base folder, and compares their logits on one batch.

usage: python3 check_export.py BASE_DIR ADAPTER_DIR MERGED_DIR BATCH.safetensors

Run where transformers and PEFT are installed (the GPU machine's Python; the CPU is enough). BATCH holds
input_ids (1, T) with its image's <|image_pad|> tokens expanded, pixel_values and image_grid_thw. Prints one
JSON line: the versions, how many LoRA layers PEFT built, the keys it reported missing or unexpected, and
max |a - b| / max |b| between the merged model's logits and the base model's with the adapter (and between
the base without and with the adapter, to show the adapter matters). Exits 1 when the merged folder and the
adapter disagree by more than 1e-5 or PEFT left an adapter weight unloaded.
"""
import json
import sys

import peft
import torch
import transformers
from peft import PeftModel
from safetensors.torch import load_file
from transformers import Qwen2_5_VLForConditionalGeneration


def load(folder):
    return Qwen2_5_VLForConditionalGeneration.from_pretrained(folder, dtype=torch.float32,
                                                              attn_implementation="eager").eval()


def logits(model, batch):
    with torch.no_grad():
        return model(**batch).logits


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))


def main(base_dir, adapter_dir, merged_dir, batch_path):
    batch = load_file(batch_path)
    batch = {"input_ids": batch["input_ids"].long(), "pixel_values": batch["pixel_values"].float(),
             "image_grid_thw": batch["image_grid_thw"].long(),
             "mm_token_type_ids": (batch["input_ids"] == load(base_dir).config.image_token_id).int()}
    base = logits(load(base_dir), batch)
    adapted_model = PeftModel.from_pretrained(load(base_dir), adapter_dir)
    lora_layers = sum(1 for n, _ in adapted_model.named_modules() if n.endswith("lora_A"))
    # Keys compared in one layout (transformers 5 nests the language model under model.language_model).
    def plain(key):
        return key.replace(".default", "").replace("model.language_model.", "model.").replace("model.visual.", "visual.")
    saved = {plain(k): v for k, v in load_file(adapter_dir + "/adapter_model.safetensors").items()}
    state = {plain(k): v for k, v in adapted_model.state_dict().items() if "lora_" in k}
    unloaded = [k for k in state if k not in saved or not torch.equal(state[k], saved[k])]
    adapted = logits(adapted_model, batch)
    merged = logits(load(merged_dir), batch)
    out = {"transformers": transformers.__version__, "peft": peft.__version__, "torch": torch.__version__,
           "lora_layers": lora_layers, "adapter_tensors": len(saved), "not_loaded_from_file": unloaded[:6],
           "merged_vs_adapted": rel(merged, adapted), "base_vs_adapted": rel(base, adapted)}
    print(json.dumps(out))
    return 0 if out["merged_vs_adapted"] < 1e-5 and not unloaded else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
