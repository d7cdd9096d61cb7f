"""Golden outputs of transformers' Qwen2_5_VLForConditionalGeneration (and one PEFT LoRA step), for the
worker's qwen2_5_vl kind.

usage: python3 make_qwen2_5_vl_golden.py OUT_DIR

Run where transformers (and PEFT) are installed (the GPU machine's Python; the CPU is enough). It builds a
tiny Qwen2.5-VL with random weights from a fixed seed:
  language model: vocabulary 1024, 2 layers, hidden 64, 4 heads over 2 key/value heads, SwiGLU 96,
                  mrope_section [2, 3, 3], rope_theta 1e6, rms eps 1e-6, untied head
  vision tower:   depth 2 (block 1 full attention, block 0 windows of 112 pixels), hidden 32, 2 heads,
                  SwiGLU 48, patch 14, merge 2, out_hidden 64
draws two images of odd sizes (200 x 145 and 115 x 90 pixels) and turns them into pixel_values with
transformers' own image processor, and runs a batch of three samples of 46 tokens in float32 with eager
attention: text, image A, text; image B left-padded; text only, right-padded. It writes to OUT_DIR:
  config.json, model.safetensors   the checkpoint as transformers saves it (its names, its config shape)
  batch.safetensors                input_ids, attention_mask, labels (int64), pixel_values (float32),
                                   image_grid_thw (int64)
  golden.safetensors               position_ids (3, B, T) from get_rope_index, image_features, logits,
                                   loss, grad.NAME for GRADS; its metadata names the versions
  lora.safetensors                 PEFT LoRA (r 4, alpha 8, q/k/v/o of the language model, B drawn
                                   non-zero): lora.KEY (initial), grad.KEY and updated.KEY after one
                                   torch.optim.AdamW step (lr 1e-3), loss; KEY is PEFT's adapter key
  adapter/                         that adapter before the step, as PeftModel.save_pretrained writes it
"""
import inspect
import json
import os
import sys

import numpy as np
import torch
import transformers
from PIL import Image
from safetensors.torch import save_file
from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

VOCAB = 1024
IMAGE, VIDEO, START, END = 1000, 1001, 1002, 1003
GRADS = ["model.visual.patch_embed.proj.weight", "model.visual.blocks.0.attn.qkv.weight",
         "model.visual.blocks.1.attn.proj.bias", "model.visual.blocks.1.mlp.down_proj.weight",
         "model.visual.merger.mlp.0.weight", "model.visual.merger.ln_q.weight",
         "model.language_model.embed_tokens.weight", "model.language_model.layers.0.self_attn.q_proj.weight",
         "model.language_model.layers.1.mlp.up_proj.weight", "lm_head.weight"]


def tiny_config():
    text = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=1024, rms_norm_eps=1e-6, tie_word_embeddings=False,
                hidden_act="silu",
                rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1000000.0})
    vision = dict(depth=2, hidden_size=32, intermediate_size=48, num_heads=2, in_channels=3, patch_size=14,
                  spatial_merge_size=2, temporal_patch_size=2, window_size=112, out_hidden_size=64,
                  fullatt_block_indexes=[1])
    cfg = Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=IMAGE, video_token_id=VIDEO,
                           vision_start_token_id=START, vision_end_token_id=END, tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    for sub in (cfg.text_config, cfg.vision_config):
        sub._attn_implementation = "eager"
    return cfg


def image(w, h, seed):
    g = np.random.default_rng(seed)
    x, y = np.meshgrid(np.arange(w), np.arange(h))
    noise = g.integers(0, 64, (h, w))
    rgb = np.stack([(x * 255 // w + noise) % 256, (y * 255 // h + 2 * noise) % 256, (x + y + 3 * noise) % 256], -1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def image_processor():
    try:
        from transformers import Qwen2VLImageProcessorPil as cls
    except ImportError:
        from transformers import Qwen2VLImageProcessor as cls
    return cls(min_pixels=3136, max_pixels=200704)


def batch(pixels_per_image):
    a, b = pixels_per_image
    t = 46
    g = torch.Generator().manual_seed(11)
    ids = torch.randint(0, 900, (3, t), generator=g)
    mask = torch.ones(3, t, dtype=torch.int64)
    ids[0, 3] = START
    ids[0, 4:4 + a] = IMAGE
    ids[0, 4 + a] = END
    mask[1, :22] = 0
    ids[1, :22] = 0
    ids[1, 22] = START
    ids[1, 23:23 + b] = IMAGE
    ids[1, 23 + b] = END
    mask[2, 30:] = 0
    ids[2, 30:] = 0
    labels = ids.clone()
    labels[(mask == 0) | (ids == IMAGE) | (ids == START)] = -100
    labels[0, :2] = -100
    return ids, mask, labels


def call_with(fn, **kwargs):
    """fn with the keyword arguments its signature takes."""
    names = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in names})


def features(model, pixel_values, grid):
    out = model.model.get_image_features(pixel_values, grid)
    out = getattr(out, "pooler_output", out)
    return torch.cat(list(out), 0) if isinstance(out, (list, tuple)) else out


def lora_step(model, inputs, out):
    from peft import LoraConfig, get_peft_model
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], lora_dropout=0.0,
                     init_lora_weights=False)
    peft = get_peft_model(model, cfg)
    peft.save_pretrained(os.path.join(out, "adapter"))
    adapters = {n: p for n, p in peft.named_parameters() if p.requires_grad}
    record = {"lora." + n: p.detach().clone() for n, p in adapters.items()}
    loss = peft(**inputs).loss
    loss.backward()
    opt = torch.optim.AdamW(list(adapters.values()), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    opt.step()
    for n, p in adapters.items():
        record["grad." + n] = p.grad.detach().clone()
        record["updated." + n] = p.detach().clone()
    record["loss"] = loss.detach().reshape(())
    save_file({k: v.contiguous() for k, v in record.items()}, os.path.join(out, "lora.safetensors"),
              {"peft_keys": "the adapter's parameter paths in the PeftModel"})
    return loss.item()


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(tiny_config()).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1.0 + 0.1 * torch.randn_like(p) if name.endswith(("norm.weight", "norm1.weight", "norm2.weight",
                                                                        "ln_q.weight")) else 0.05 * torch.randn_like(p))
    model.save_pretrained(out, safe_serialization=True)

    processor = image_processor()
    processed = processor(images=[image(200, 145, 1), image(115, 90, 2)], return_tensors="pt")
    pixel_values, grid = processed["pixel_values"].float(), processed["image_grid_thw"].long()
    units = (grid.prod(-1) // 4).tolist()
    ids, mask, labels = batch(units)
    save_file({"input_ids": ids, "attention_mask": mask, "labels": labels, "pixel_values": pixel_values.contiguous(),
               "image_grid_thw": grid}, os.path.join(out, "batch.safetensors"))

    token_types = (ids == IMAGE).int()
    positions, _ = call_with(model.model.get_rope_index, input_ids=ids, image_grid_thw=grid, attention_mask=mask,
                             mm_token_type_ids=token_types)
    inputs = dict(input_ids=ids, attention_mask=mask, pixel_values=pixel_values, image_grid_thw=grid, labels=labels,
                  position_ids=positions)
    result = model(**inputs)
    result.loss.backward()
    params = dict(model.named_parameters())
    golden = {"position_ids": positions.contiguous(), "logits": result.logits.detach().contiguous(),
              "loss": result.loss.detach().reshape(())}
    with torch.no_grad():
        golden["image_features"] = features(model, pixel_values, grid).contiguous()
    for name in GRADS:
        golden["grad." + name] = params[name].grad.detach().contiguous()
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "image_processor": type(processor).__name__, "grid": str(grid.tolist())}
    save_file(golden, os.path.join(out, "golden.safetensors"), versions)
    model.zero_grad()
    summary = dict(versions, loss=result.loss.item())
    try:
        import peft
        summary["lora_loss"] = lora_step(model, inputs, out)
        summary["peft"] = peft.__version__
    except ImportError as e:
        summary["peft"] = f"not installed: {e}"
    print(json.dumps(summary))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
