#!/usr/bin/env python3
"""transformers + PEFT side of the Qwen2.5-VL-7B LoRA comparison (docs/benchmarks.md).

    python3 bench/gpu/hf_qwen2_5_vl.py --model build/vl-bench/qwen2_5_vl-7b --data build/vl-bench/chats.jsonl
    python3 bench/gpu/hf_qwen2_5_vl.py --compare HF_JSONL PARALLAX_LOG     # both sides, one table

The inputs are bench/gpu/make_vl_data.py's, the same files Parallax's spec
bench/gpu/specs/qwen2_5_vl-7b-lora-1gpu.toml reads:
- the model: Qwen2_5_VLForConditionalGeneration built from a Qwen2_5_VLConfig made here from the
  folder's config.json (the published 7B sizes), on the GPU in bf16, then the folder's bf16
  safetensors copied in (the Hub's names mapped onto transformers' own), so both sides start from
  the same weights;
- the batch: each conversation rendered as Qwen2-VL's chat template renders it (the default system
  message, the image as <|vision_start|>, one <|image_pad|> per visual token, <|vision_end|>, then the
  text), tokenized with the folder's tokenizer.json; labels on the assistant answers and the
  <|im_end|> after each (what Parallax trains on); the image through transformers' Qwen2-VL image
  processor (smart resize within max_pixels, CLIP normalization, 14 x 14 patches, 2 frames, merge 2).
  One conversation per micro-batch, --samples of them per optimizer step, as the spec's
  micro_batch = 1, global_batch = 4;
- the step as a PEFT user runs it with HF Trainer's bf16 = True: frozen bf16 weights, LoRA r 64
  (alpha 128, no dropout) on the language model's q_proj, k_proj, v_proj, o_proj with fp32 adapter
  weights (PEFT's default autocast_adapter_dtype), forward under bf16 autocast, gradient
  checkpointing on every decoder layer and vision block (non-reentrant), AdamW (fused; betas 0.9,
  0.95; no weight decay), gradient clipping at 1.0; attention through flash_attention_2 where the
  flash_attn package is installed, else SDPA.

Prints one JSON line: step_s (the median of --steps timed steps after --warmup, each between
torch.cuda.synchronize calls), tokens_per_s (every position of the sequences, the visual tokens
included, over the step), the peak memory allocated in a step (torch.cuda.max_memory_allocated, set
back before each timed step), and MFU from the FLOPs of each part counted below over
--peak-tflops (989: H100 and H200 bf16 dense).

FLOPs counted per step (model FLOPs; checkpointing's recomputation is given apart, not counted):
- vision tower and merger: forward only (frozen; nothing of theirs needs a gradient): 2 x m x n x k
  per product, attention 4 x C x (keys per query) per patch (windows of 8 x 8 patches, every patch in
  the full-attention blocks);
- language model: forward, then backward with input gradients only for the frozen products (2 x each
  forward product) and input and weight gradients for the adapters (3 x); causal attention as
  4 x C x T (T + 1) / 2 per layer forward and twice that backward; the head over every position,
  forward and its input gradient.
"""

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time

from parallax_log import parallax_events

IMAGE_MEAN = (0.48145466, 0.4578275, 0.40821073)  # OpenAI CLIP's, as Qwen2-VL's processor uses
IMAGE_STD = (0.26862954, 0.26130258, 0.27577711)
DEFAULT_SYSTEM = "You are a helpful assistant."
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


# ---- config and model ---------------------------------------------------------------------------

def read_config(folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def make_config(raw):
    """A Qwen2_5_VLConfig with the folder's sizes (the published, flat config.json shape)."""
    from transformers import Qwen2_5_VLConfig
    keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "hidden_act", "max_position_embeddings", "rms_norm_eps", "initializer_range",
            "attention_dropout", "use_sliding_window", "sliding_window", "max_window_layers")
    text = {k: raw[k] for k in keys if k in raw}
    theta, section = raw["rope_theta"], raw["rope_scaling"]["mrope_section"]
    text.update(tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": theta, "mrope_section": section})
    v = raw["vision_config"]
    vision = {k: v[k] for k in ("depth", "hidden_size", "intermediate_size", "num_heads", "out_hidden_size",
                                "patch_size", "spatial_merge_size", "temporal_patch_size", "window_size",
                                "fullatt_block_indexes", "hidden_act", "tokens_per_second") if k in v}
    vision["in_channels"] = v.get("in_chans", 3)
    ids = {k: raw[k] for k in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")}
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, tie_word_embeddings=False, **ids)


def build_model(config, attn):
    import torch
    from transformers import Qwen2_5_VLForConditionalGeneration as Model
    with torch.device("cuda"):
        try:
            model = Model._from_config(config, attn_implementation=attn, dtype=torch.bfloat16)
        except TypeError:  # transformers before 4.56 names it torch_dtype
            model = Model._from_config(config, attn_implementation=attn, torch_dtype=torch.bfloat16)
    return model.to("cuda")


def load_weights(model, folder):
    """Copies the folder's shards into the model: the Hub's names (model.*, visual.*) or transformers'."""
    import torch
    from safetensors.torch import load_file
    with open(os.path.join(folder, "model.safetensors.index.json"), encoding="utf-8") as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    params = dict(model.named_parameters())

    def target(name):
        options = [name]
        if name.startswith("model.") and not name.startswith(("model.language_model.", "model.visual.")):
            options.append("model.language_model." + name[len("model."):])
        if name.startswith("visual."):
            options.append("model." + name)
        return next((o for o in options if o in params), None)

    loaded, unknown = set(), []
    for name in files:
        tensors = load_file(os.path.join(folder, name), device="cuda")
        with torch.no_grad():
            for key, value in tensors.items():
                to = target(key)
                if to is None or params[to].shape != value.shape:
                    unknown.append(key)
                    continue
                params[to].copy_(value)
                loaded.add(to)
        del tensors
    missing = sorted(set(params) - loaded)
    if missing or unknown:
        sys.exit(f"hf_qwen2_5_vl: weights of {folder} do not fit the model: missing {missing[:5]} "
                 f"({len(missing)}), not placed {unknown[:5]} ({len(unknown)})")
    if model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr():
        sys.exit("hf_qwen2_5_vl: lm_head is tied to embed_tokens; Qwen2.5-VL-7B has a head of its own")
    return len(loaded)


def add_lora(model, r, alpha, checkpointing):
    from peft import LoraConfig, get_peft_model
    model.config.use_cache = False
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=TARGETS, bias="none",
                        task_type="CAUSAL_LM")
    model = get_peft_model(model, config)
    adapted = [n for n, m in model.named_modules() if n.endswith(tuple("." + t for t in TARGETS)) and
               hasattr(m, "lora_A")]
    if any("visual" in n for n in adapted):
        sys.exit("hf_qwen2_5_vl: an adapter landed in the vision tower")
    trainable = [p for p in model.parameters() if p.requires_grad]
    return model, trainable, len(adapted)


# ---- data ---------------------------------------------------------------------------------------

def image_processor(min_pixels, max_pixels):
    """transformers' Qwen2-VL image processor (the fast one where torchvision is), or None."""
    import transformers
    for name in ("Qwen2VLImageProcessorFast", "Qwen2VLImageProcessor"):
        cls = getattr(transformers, name, None)
        if cls is None:
            continue
        for kwargs in ({"size": {"shortest_edge": min_pixels, "longest_edge": max_pixels}},
                       {"min_pixels": min_pixels, "max_pixels": max_pixels}):
            try:
                return cls(patch_size=14, temporal_patch_size=2, merge_size=2, image_mean=IMAGE_MEAN,
                           image_std=IMAGE_STD, **kwargs), name
            except (TypeError, ValueError):
                continue
    return None, None


def patches_by_hand(img, patch=14, temporal=2, merge=2):
    """The processor's patches for an image whose sides already are multiples of 28 within max_pixels."""
    import numpy as np
    import torch
    a = (np.asarray(img, dtype=np.float32) / 255.0 - np.array(IMAGE_MEAN, dtype=np.float32)) / np.array(IMAGE_STD, dtype=np.float32)
    x = torch.from_numpy(a).permute(2, 0, 1).unsqueeze(0).repeat(temporal, 1, 1, 1)  # (T, C, H, W)
    c, h, w = x.shape[1], x.shape[2] // patch, x.shape[3] // patch
    x = x.reshape(1, temporal, c, h // merge, merge, patch, w // merge, merge, patch)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8).reshape(h * w, c * temporal * patch * patch)
    return x, torch.tensor([[1, h, w]])


def load_image(path, min_pixels, max_pixels):
    from PIL import Image
    img = Image.open(path).convert("RGB")
    proc, name = image_processor(min_pixels, max_pixels)
    if proc is not None:
        out = proc(images=[img], return_tensors="pt")
        return out["pixel_values"], out["image_grid_thw"], name
    if img.width % 28 or img.height % 28 or img.width * img.height > max_pixels:
        sys.exit("hf_qwen2_5_vl: no Qwen2-VL image processor in transformers, and the image needs resizing")
    pixels, grid = patches_by_hand(img)
    return pixels, grid, "by hand (no resize needed)"


def render(messages, pads):
    """Qwen2-VL's chat template; `pads` gives each image's visual tokens in order. Returns the text and
    the character spans of the assistant answers (each with its <|im_end|>)."""
    text, spans, images = "", [], iter(pads)
    if not messages or messages[0]["role"] != "system":
        text += f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
    for m in messages:
        text += f"<|im_start|>{m['role']}\n"
        start = len(text)
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        for block in content:
            if block["type"] == "image":
                text += "<|vision_start|>" + "<|image_pad|>" * next(images) + "<|vision_end|>"
            else:
                text += block["text"]
        text += "<|im_end|>"
        if m["role"] == "assistant":
            spans.append((start, len(text)))
        text += "\n"
    return text, spans


def load_batches(data, folder, min_pixels, max_pixels):
    """One micro-batch per conversation: input ids, labels, the image's patches and grid."""
    import torch
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    vision_ids = {tok.token_to_id(t) for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>")}
    base = os.path.dirname(os.path.abspath(data))
    batches, info = [], {"visual": 0, "labels": 0, "tokens": 0, "processor": None, "grids": []}
    cache = {}
    with open(data, encoding="utf-8") as f:
        samples = [json.loads(line) for line in f if line.strip()]
    for sample in samples:
        paths = [b["image"] for m in sample["messages"] if isinstance(m["content"], list)
                 for b in m["content"] if b["type"] == "image"]
        images = []
        for p in paths:
            if p not in cache:
                cache[p] = load_image(os.path.join(base, p), min_pixels, max_pixels)
            images.append(cache[p])
        pads = [int(g.prod()) // 4 for _, g, _ in images]
        text, spans = render(sample["messages"], pads)
        enc = tok.encode(text, add_special_tokens=False)
        labels = [i if any(s <= o[0] < e for s, e in spans) and i not in vision_ids else -100
                  for i, o in zip(enc.ids, enc.offsets)]
        ids = torch.tensor([enc.ids], device="cuda")
        batches.append({
            "input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": torch.tensor([labels], device="cuda"),
            "pixel_values": torch.cat([p for p, _, _ in images]).to("cuda"),
            "image_grid_thw": torch.cat([g for _, g, _ in images]).to("cuda")})
        info["tokens"] += len(enc.ids)
        info["visual"] += sum(pads)
        info["labels"] += sum(1 for x in labels if x != -100)
        info["processor"] = images[0][2] if images else None
        info["grids"] += [g.tolist()[0] for _, g, _ in images]
        info.setdefault("sample_tokens", []).append(len(enc.ids))
    return batches, info


# ---- FLOPs --------------------------------------------------------------------------------------

def window_sizes(t, h, w, window, patch, merge):
    """Patches in each attention window of a t x h x w patch grid (windows of window / patch patches a side)."""
    side = window // patch // merge  # merged tokens a side
    mh, mw = h // merge, w // merge
    rows = [min(side, mh - i) for i in range(0, mh, side)]
    cols = [min(side, mw - j) for j in range(0, mw, side)]
    return [r * c * merge * merge for _ in range(t) for r in rows for c in cols]


def sample_flops(cfg, tokens, grids, r):
    """Model FLOPs of one conversation's training step, by part."""
    c, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    layers, heads, kvh = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    kv = kvh * (c // heads)
    vc = cfg["vision_config"]
    cv, fv, depth = vc["hidden_size"], vc["intermediate_size"], vc["depth"]
    vision = 0.0
    for t, h, w in grids:
        p = t * h * w
        vision += 2.0 * p * (3 * vc["temporal_patch_size"] * vc["patch_size"] ** 2) * cv
        windows = window_sizes(t, h, w, vc["window_size"], vc["patch_size"], vc["spatial_merge_size"])
        for block in range(depth):
            keys = p * p if block in vc["fullatt_block_indexes"] else sum(n * n for n in windows)
            vision += 2.0 * p * (cv * 3 * cv + cv * cv + 3 * cv * fv) + 4.0 * cv * keys
        m = cv * vc["spatial_merge_size"] ** 2
        vision += 2.0 * (p / vc["spatial_merge_size"] ** 2) * (m * m + m * vc["out_hidden_size"])
    T = tokens
    linear = 2.0 * T * (2 * c * c + 2 * c * kv + 3 * c * f) * layers
    attention = 4.0 * c * T * (T + 1) / 2 * layers
    lora = 2.0 * T * r * (2 * (c + c) + 2 * (c + kv)) * layers
    head = 2.0 * T * c * v
    return {
        "vision_and_merger_forward": vision,
        "lm_forward": linear + attention + lora + head,
        "lm_backward": linear + 2 * attention + 2 * lora + head,
        "recompute_not_counted": linear + attention + lora,
    }


# ---- the run ------------------------------------------------------------------------------------

def one_step(model, trainable, opt, batches):
    import torch
    losses = []
    for b in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(**b, use_cache=False)
        (out.loss / len(batches)).backward()
        losses.append(out.loss.detach())
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return torch.stack(losses).mean()


def train(model, trainable, batches, warmup, steps):
    import torch
    opt = torch.optim.AdamW(trainable, lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, fused=True)
    model.train()
    times, peaks, losses = [], [], []
    for i in range(warmup + steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        loss = one_step(model, trainable, opt, batches)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        losses.append(loss)
        if i >= warmup:
            times.append(dt)
            peaks.append(torch.cuda.max_memory_allocated())
        print(f"step {i}: {dt * 1e3:.1f} ms", file=sys.stderr, flush=True)
    return times, peaks, [float(x) for x in losses]


def run(args):
    import torch
    import transformers
    import peft
    attn = args.attn
    if attn == "auto":
        attn = "flash_attention_2" if importlib.util.find_spec("flash_attn") else "sdpa"
    raw = read_config(args.model)
    t0 = time.perf_counter()
    model = build_model(make_config(raw), attn)
    placed = load_weights(model, args.model)
    load_s = time.perf_counter() - t0
    model, trainable, adapted = add_lora(model, args.lora_r, args.lora_alpha, not args.no_checkpointing)
    batches, info = load_batches(args.data, args.model, args.min_pixels, args.max_pixels)
    batches = batches[: args.samples]
    if args.no_attention_mask:
        for b in batches:
            del b["attention_mask"]
    times, peaks, losses = train(model, trainable, batches, args.warmup, args.steps)

    per_step = {}
    for b in batches:
        grids = b["image_grid_thw"].tolist()
        for k, val in sample_flops(raw, b["input_ids"].shape[1], grids, args.lora_r).items():
            per_step[k] = per_step.get(k, 0.0) + val
    counted = sum(v for k, v in per_step.items() if k != "recompute_not_counted")
    step_s = statistics.median(times)
    tokens = sum(b["input_ids"].shape[1] for b in batches)
    print(json.dumps({
        "impl": "transformers + PEFT", "variant": args.label, "model": "qwen2_5_vl-7b",
        "device": torch.cuda.get_device_name(), "attention_mask": not args.no_attention_mask,
        "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
        "attn": attn, "checkpointing": not args.no_checkpointing,
        "precision": "frozen weights bf16, LoRA weights fp32, forward under bf16 autocast",
        "samples_per_step": len(batches), "micro_batch": 1, "tokens_per_step": tokens,
        "visual_tokens_per_step": info["visual"], "label_tokens_per_step": info["labels"],
        "sample_tokens": info["sample_tokens"][: len(batches)], "image_grids": info["grids"][: len(batches)],
        "image_processor": info["processor"], "step_s": step_s, "step_s_min": min(times), "step_s_max": max(times),
        "steps_timed": len(times), "warmup": args.warmup, "tokens_per_s": tokens / step_s,
        "peak_mem_gib": max(peaks) / 2**30, "reserved_gib": torch.cuda.max_memory_reserved() / 2**30,
        "flops_per_step": counted, "flops_parts": per_step, "peak_tflops": args.peak_tflops,
        "mfu": counted / step_s / (args.peak_tflops * 1e12),
        "trainable_params": sum(p.numel() for p in trainable), "trainable_dtype": str(trainable[0].dtype),
        "adapted_linears": adapted, "tensors_loaded": placed, "build_and_load_s": load_s,
        "loss_first": losses[0], "loss_last": losses[-1]}))


# ---- both sides ---------------------------------------------------------------------------------

def compare(hf_path, log_path, warmup_steps=10):
    """One table of both sides: Parallax's step time from its step telemetry (steps 10 and later), the
    tokens and FLOPs of the batch from the transformers side (the same files)."""
    with open(hf_path, encoding="utf-8") as f:
        hf = [json.loads(line) for line in f if line.startswith("{")][-1]
    events = parallax_events(log_path)
    steps = [e for e in events if e.get("ev") == "step"]
    timed = [e for e in steps if e.get("step", 0) >= warmup_steps]
    if not timed:
        sys.exit(f"compare: no step events from step {warmup_steps} on in {log_path}")
    step_s = statistics.median(e.get("step_ms_max", e.get("step_ms", 0)) for e in timed) / 1e3
    peak = max(e.get("peak_mem", 0) for e in timed) / 2**30
    units = {}
    for e in events:
        if e.get("ev") == "unit_time":
            u = units.setdefault(e.get("kind", "?"), [0, 0.0, 0.0])
            u[0] += 1
            u[1] += e.get("forward_ms", 0.0)
            u[2] += e.get("backward_ms", 0.0)
    peak_flops = hf["peak_tflops"] * 1e12
    px = {"impl": "Parallax", "step_s": step_s, "tokens_per_s": hf["tokens_per_step"] / step_s,
          "mfu": hf["flops_per_step"] / step_s / peak_flops, "peak_mem_gib": peak,
          "own_tokens_per_s": statistics.median(e.get("tokens_per_s", 0) for e in timed),
          "own_mfu": statistics.median(e.get("mfu", 0) for e in timed),
          "loss_first": steps[0].get("loss") if steps else None, "loss_last": steps[-1].get("loss") if steps else None,
          "steps_timed": len(timed), "units": units}
    print("| Implementation | Step s | Tokens/s | MFU | Peak GiB (allocated) | First / last loss |")
    print("|---|---:|---:|---:|---:|---|")
    for r in (px, hf):
        print(f"| {r['impl']} | {r['step_s']:.3f} | {r['tokens_per_s']:,.0f} | {r['mfu'] * 100:.1f}% "
              f"| {r['peak_mem_gib']:.1f} | {r['loss_first']:.3f} / {r['loss_last']:.3f} |")
    print(f"\ntransformers' step over Parallax's: {hf['step_s'] / step_s:.2f}x "
          f"({'Parallax faster' if step_s < hf['step_s'] else 'Parallax slower'}); device {hf['device']}, "
          f"torch {hf['torch']}, transformers {hf['transformers']}, peft {hf['peft']}, attention {hf['attn']}")
    if units:
        print("\nParallax unit times after training (ms, forward / backward, each unit alone on one micro-batch):")
        for kind, (n, fwd, bwd) in sorted(units.items()):
            print(f"- {kind} x {n}: {fwd:.1f} / {bwd:.1f}")
    print(json.dumps({"comparison": {"parallax": px, "transformers": {k: hf[k] for k in (
        "step_s", "tokens_per_s", "mfu", "peak_mem_gib", "loss_first", "loss_last")},
        "speedup": hf["step_s"] / step_s}}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="build/vl-bench/qwen2_5_vl-7b")
    ap.add_argument("--data", default="build/vl-bench/chats.jsonl")
    ap.add_argument("--samples", type=int, default=4, help="conversations per optimizer step (one per micro-batch)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--lora-r", type=int, default=64)
    ap.add_argument("--lora-alpha", type=float, default=128.0)
    ap.add_argument("--min-pixels", type=int, default=1024)
    ap.add_argument("--max-pixels", type=int, default=1280 * 28 * 28)
    ap.add_argument("--attn", choices=["auto", "sdpa", "flash_attention_2", "eager"], default="auto")
    ap.add_argument("--no-checkpointing", action="store_true")
    ap.add_argument("--no-attention-mask", action="store_true",
                    help="call the model without the all-ones attention mask a collator passes")
    ap.add_argument("--label", default="default", help="a name for this configuration in the JSON line")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--compare", nargs=2, metavar=("HF_JSONL", "PARALLAX_LOG"))
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    else:
        run(args)


if __name__ == "__main__":
    main()
