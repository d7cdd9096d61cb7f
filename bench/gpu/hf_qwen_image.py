#!/usr/bin/env python3
"""diffusers + PEFT side of the Qwen-Image (20B) LoRA comparison at 1024 x 1024 (docs/benchmarks.md).

    python3 bench/gpu/hf_qwen_image.py --data build/qi-bench/latents        # one JSON line on stdout
    python3 bench/gpu/hf_qwen_image.py --compare HF_JSONL PARALLAX_LOG       # both sides, one table
    python3 bench/gpu/hf_qwen_image.py --tiny                                # a CPU check of this script

diffusers comes from source (PYTHONPATH naming the folder that holds `diffusers/`); PEFT, safetensors
and a CUDA PyTorch from the environment. The inputs are bench/gpu/make_qi_data.py's, the files
Parallax's spec bench/gpu/specs/qwen_image-20b-lora-1gpu.toml reads: four samples of latents
(16, 128, 128) and prompt states (L, 3584), L = 96, 128, 160, 112.

What runs, as diffusers' examples/dreambooth/train_dreambooth_lora_qwen_image.py runs a step:
- the model: QwenImageTransformer2DModel with the published configuration (60 layers, 24 heads of 128,
  joint_attention_dim 3584, 64 packed input channels, 16 out, patch 2, axes_dims_rope (16, 56, 56), no
  guidance embedding): 20,430,401,088 parameters, built directly on the GPU in bf16 with diffusers'
  own random initialization (the weights do not matter for speed, and Parallax's side is randomly
  initialized too), enable_gradient_checkpointing() (torch.utils.checkpoint, non-reentrant, per block;
  --recompute-blocks N wraps the first N blocks only, as Parallax's train.recompute_blocks);
- the adapter: transformer.add_adapter(LoraConfig(r 32, alpha 32, no dropout, PEFT's initialization))
  on DiffSynth-Studio's 12 targets (to_q, to_k, to_v, add_q_proj, add_k_proj, add_v_proj, to_out.0,
  to_add_out, img_mlp.net.2, img_mod.1, txt_mlp.net.2, txt_mod.1): 720 Linears, 235,929,600 values,
  upcast to fp32 by diffusers' cast_training_params; the forward under bf16 autocast (what accelerate's
  mixed_precision = "bf16" wraps it in; --no-autocast leaves it out);
- each micro-batch one sample: sigma from u = sigmoid(n), n ~ N(0, 1), shifted as Qwen-Image's
  scheduler shifts it for the image's N packed tokens, sigma = e^mu / (e^mu + 1/u - 1) with
  mu = 0.5 + 0.4 (N - 256) / (8192 - 256); x_t = (1 - sigma) latents + sigma noise, packed 2 x 2 by
  QwenImagePipeline._pack_latents; img_shapes [(1, 64, 64)]; the prompt's states with no mask (what
  QwenImagePipeline.encode_prompt passes for a prompt without padding; --pass-mask gives an all-ones
  encoder_hidden_states_mask instead, which makes SDPA take a masked kernel); timestep = sigma; the loss
  the mean squared error against packed(noise - latents), divided by the micro-batches of the step;
- each step: four micro-batches, backward after each, then gradient clipping at 1.0, AdamW (fused;
  lr 1e-4, betas 0.9, 0.95 and no weight decay, as the Parallax spec trains) and zero_grad.

Prints one JSON line: step_s (the median of --steps timed steps after --warmup, each between
torch.cuda.synchronize calls), tokens_per_s (the image's 4096 packed tokens and the prompt's states of
each sample, over the step), the peak memory allocated in a timed step (torch.cuda.max_memory_allocated,
set back before each), parameter counts, versions, the losses, and MFU from the FLOPs below over
--peak-tflops (989: H100 and H200 bf16 dense).

FLOPs counted per sample (step_flops; the same numbers price Parallax's step in --compare): 2 x the
multiply-adds of every Linear that has to run, on the sample's image tokens and prompt states; joint
attention 4 x queries x keys x 3072 per block (QK^T and AV); the last block's text stream gives keys and
values only (its queries, to_add_out, txt_mlp and the MLP half of txt_mod feed nothing the loss reads,
as docs/models.md says; diffusers runs them all the same). Backward: the input gradient of each frozen
Linear whose input carries a gradient (1 x its forward: not img_in, txt_in, the timestep embedder, the
modulations and norm_out, which read data or sigma, nor block 0's projections of the embedded inputs),
the adapters' weight gradients (and input gradients where needed), attention 2 x its forward.
Checkpointing's recomputation is given apart and not counted.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

from parallax_log import parallax_events

DIFFUSERS_COMMIT = "58eb52c0803ea9af3abec60841c2a093bdf1f951"
PUBLISHED = dict(patch_size=2, in_channels=64, out_channels=16, num_layers=60, attention_head_dim=128,
                 num_attention_heads=24, joint_attention_dim=3584, guidance_embeds=False, axes_dims_rope=(16, 56, 56))
TINY = dict(patch_size=2, in_channels=64, out_channels=16, num_layers=2, attention_head_dim=32,
            num_attention_heads=2, joint_attention_dim=48, guidance_embeds=False, axes_dims_rope=(8, 12, 12))
PARAMETERS_20B = 20_430_401_088  # docs/spec.md's count for the qwen_image 20b preset
TARGETS = ["to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj", "to_out.0", "to_add_out",
           "img_mlp.net.2", "img_mod.1", "txt_mlp.net.2", "txt_mod.1"]


# ---- FLOPs --------------------------------------------------------------------------------------

def linear_parts(c, n_img, n_txt, first, last):
    """(in, out, tokens, input carries a gradient, adapted) of each Linear one block of width c runs for a
    sample; block 0's projections read the embedded inputs, which carry no gradient."""
    f = 4 * c
    grad_in = not first
    out = [(c, 6 * c, 1, False, True),  # img_mod.1 on SiLU(temb)
           (c, 3 * c if last else 6 * c, 1, False, True)]  # txt_mod.1: the last block reads its first half
    for _ in ("to_q", "to_k", "to_v"):
        out.append((c, c, n_img, grad_in, True))
    for name in ("add_q_proj", "add_k_proj", "add_v_proj"):
        if not (last and name == "add_q_proj"):
            out.append((c, c, n_txt, grad_in, True))
    out += [(c, c, n_img, True, True),  # to_out.0
            (c, f, n_img, True, False), (f, c, n_img, True, True)]  # img_mlp.net.0.proj, net.2
    if not last:
        out += [(c, c, n_txt, True, True),  # to_add_out
                (c, f, n_txt, True, False), (f, c, n_txt, True, True)]  # txt_mlp
    return out


def sample_flops(cfg, n_img, n_txt, r):
    """Model FLOPs of one sample's forward and backward, by part."""
    c = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    layers, text_dim = cfg["num_layers"], cfg["joint_attention_dim"]
    packed = cfg["in_channels"]
    out_ch = cfg["patch_size"] ** 2 * cfg["out_channels"]
    # Embeddings and head: img_in, txt_in, the timestep embedder (256 -> C -> C), norm_out.linear, proj_out.
    embed = 2.0 * (n_img * packed * c + n_txt * text_dim * c + 256 * c + c * c)
    head_fwd = 2.0 * (c * 2 * c + n_img * c * out_ch)
    head_bwd = 2.0 * n_img * c * out_ch  # proj_out's input gradient
    frozen_fwd = frozen_bwd = lora_fwd = lora_bwd = attn_fwd = 0.0
    for i in range(layers):
        last = i == layers - 1
        for fan_in, fan_out, n, grad_in, adapted in linear_parts(c, n_img, n_txt, i == 0, last):
            frozen_fwd += 2.0 * n * fan_in * fan_out
            frozen_bwd += 2.0 * n * fan_in * fan_out if grad_in else 0.0
            if adapted:
                lora_fwd += 2.0 * n * r * (fan_in + fan_out)
                # B^T dY and dB (2 n r out each), dA (2 n r in), and A^T (B^T dY) where the input needs it.
                lora_bwd += 2.0 * n * r * (2 * fan_out + fan_in) + (2.0 * n * r * fan_in if grad_in else 0.0)
        queries = n_img if last else n_img + n_txt
        attn_fwd += 4.0 * queries * (n_img + n_txt) * c
    blocks_fwd = frozen_fwd + lora_fwd + attn_fwd
    return {
        "forward": embed + blocks_fwd + head_fwd,
        "backward": frozen_bwd + lora_bwd + 2.0 * attn_fwd + head_bwd,
        "attention_forward": attn_fwd,
        "lora_forward": lora_fwd,
        "recompute_not_counted": blocks_fwd,
    }


def step_flops(cfg, samples, r):
    """Model FLOPs of one optimizer step over `samples` [(image tokens, prompt states)]: the parts summed
    over the samples, and `counted`, forward + backward."""
    parts = {}
    for n_img, n_txt in samples:
        for k, v in sample_flops(cfg, n_img, n_txt, r).items():
            parts[k] = parts.get(k, 0.0) + v
    return parts["forward"] + parts["backward"], parts


# ---- data ---------------------------------------------------------------------------------------

def load_samples(folder):
    """[(name, latents (16, H, W), prompt (L, text_dim))] of a folder of latent shards, in name order."""
    from safetensors.torch import load_file
    files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    if not files:
        sys.exit(f"hf_qwen_image: no .safetensors shards in {folder}; run bench/gpu/make_qi_data.py")
    out = []
    for name in files:
        tensors = load_file(os.path.join(folder, name))
        for key in sorted(k for k in tensors if k.endswith(".latents")):
            base = key[: -len(".latents")]
            if base + ".prompt_embeds" not in tensors:
                sys.exit(f"hf_qwen_image: {name}: {base} has latents but no prompt_embeds")
            out.append((base, tensors[key], tensors[base + ".prompt_embeds"]))
    return out


def tiny_samples():
    """Four tiny samples made here (make_qi_data.py's draw): latents (16, 12, 12), prompts of 48."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_qi_data import sample_tensors
    items = dict(sample_tensors(12, 48, [5, 9, 16, 7], 1234))
    return [(f"sample{i}", items[f"sample{i}.latents"], items[f"sample{i}.prompt_embeds"]) for i in range(4)]


def shifted_sigma(u, image_tokens):
    """Qwen-Image's scheduler shift of a uniform draw u (a number or a tensor) for an image of
    `image_tokens` packed tokens."""
    mu = 0.5 + 0.4 * (image_tokens - 256) / (8192 - 256)
    return math.exp(mu) / (math.exp(mu) + 1.0 / u - 1.0)


_PIPELINE = []


def pack(latents):
    """QwenImagePipeline._pack_latents: (B, C, H, W) -> (B, H/2 * W/2, 4 C); the same view by hand where
    the pipeline does not import (it imports transformers' Qwen2.5-VL)."""
    b, c, h, w = latents.shape
    if not _PIPELINE:
        try:
            from diffusers import QwenImagePipeline
            _PIPELINE.append(QwenImagePipeline)
        except Exception as e:  # noqa: BLE001
            print(f"hf_qwen_image: QwenImagePipeline does not import ({e}); packing by hand", file=sys.stderr)
            _PIPELINE.append(None)
    if _PIPELINE[0] is not None:
        return _PIPELINE[0]._pack_latents(latents, b, c, h, w)
    return latents.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, h // 2 * w // 2, c * 4)


# ---- model --------------------------------------------------------------------------------------

def checkpoint_first_blocks(model, n):
    """torch.utils.checkpoint (non-reentrant) around the first `n` transformer blocks only, the others
    keeping their activations: what Parallax's train.recompute_blocks = n does. diffusers'
    enable_gradient_checkpointing has no such count; each block's forward is wrapped instead."""
    import functools
    import torch.utils.checkpoint

    def checkpointed(forward, *args, **kwargs):
        if not torch.is_grad_enabled():
            return forward(*args, **kwargs)
        return torch.utils.checkpoint.checkpoint(forward, *args, use_reentrant=False, **kwargs)

    for block in model.transformer_blocks[:n]:
        block.forward = functools.partial(checkpointed, block.forward)


def build_model(cfg, device, dtype, checkpointing, recompute_blocks=0):
    """The transformer made on `device` in `dtype` (never a float32 copy of it on the host)."""
    import torch
    from diffusers import QwenImageTransformer2DModel
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        if device == "cpu":
            model = QwenImageTransformer2DModel(**cfg)
        else:
            with torch.device(device):  # torch 2.0 and later
                model = QwenImageTransformer2DModel(**cfg)
    finally:
        torch.set_default_dtype(before)
    model = model.to(device=device, dtype=dtype)
    model.requires_grad_(False)
    if checkpointing and recompute_blocks > 0:
        checkpoint_first_blocks(model, recompute_blocks)
    elif checkpointing:
        model.enable_gradient_checkpointing()
    return model


def add_lora(model, r, alpha):
    import torch
    from peft import LoraConfig
    from diffusers.training_utils import cast_training_params
    model.add_adapter(LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, init_lora_weights=True,
                                 target_modules=TARGETS))
    cast_training_params(model, dtype=torch.float32)
    trainable = [p for p in model.parameters() if p.requires_grad]
    adapted = sum(1 for _, m in model.named_modules() if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {}))
    return trainable, adapted


# ---- the run ------------------------------------------------------------------------------------

class Batches:
    """One micro-batch per sample, on the device; draws each step's noise and sigmas from a seeded generator."""

    def __init__(self, samples, device, dtype, pass_mask, seed):
        import torch
        self.items = []
        for name, latents, prompt in samples:
            x = latents.to(device=device, dtype=torch.float32).unsqueeze(0)
            states = prompt.to(device=device, dtype=dtype).unsqueeze(0)
            mask = torch.ones(1, states.shape[1], dtype=torch.int64, device=device) if pass_mask else None
            self.items.append((name, x, states, mask))
        self.gen = torch.Generator(device=device).manual_seed(seed)
        self.dtype = dtype

    def draw(self, x):
        """(model inputs, target) for one micro-batch of latents x (1, 16, H, W)."""
        import torch
        u = torch.sigmoid(torch.randn((1,), generator=self.gen, device=x.device, dtype=torch.float32))
        h, w = x.shape[2], x.shape[3]
        sigma = shifted_sigma(u, (h // 2) * (w // 2))  # (1,), on the device: no host sync
        noise = torch.randn(x.shape, generator=self.gen, device=x.device, dtype=torch.float32)
        s = sigma.view(-1, 1, 1, 1)
        noisy = (1.0 - s) * x + s * noise
        inputs = {"hidden_states": pack(noisy).to(self.dtype), "timestep": sigma, "img_shapes": [(1, h // 2, w // 2)]}
        return inputs, pack(noise - x)


def one_step(model, trainable, opt, batches, autocast):
    import torch
    losses = []
    for _, x, states, mask in batches.items:
        inputs, target = batches.draw(x)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=autocast):
            out = model(encoder_hidden_states=states, encoder_hidden_states_mask=mask, return_dict=False, **inputs)[0]
        loss = torch.mean((out.float() - target.float()) ** 2)
        (loss / len(batches.items)).backward()
        losses.append(loss.detach())
    torch.nn.utils.clip_grad_norm_(trainable, 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return torch.stack(losses).mean()


def train(model, trainable, batches, args, cuda):
    import torch
    fused = {"fused": True} if cuda else {}  # the CPU check also runs on PyTorch without a fused AdamW
    opt = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, **fused)
    model.train()
    times, peaks, losses = [], [], []
    for i in range(args.warmup + args.steps):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        loss = one_step(model, trainable, opt, batches, args.autocast)
        if cuda:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        losses.append(float(loss))
        if i >= args.warmup:
            times.append(dt)
            peaks.append(torch.cuda.max_memory_allocated() if cuda else 0)
        print(f"step {i}: {dt * 1e3:.1f} ms, loss {losses[-1]:.4f}", file=sys.stderr, flush=True)
    return times, peaks, losses


def versions():
    import torch
    import diffusers
    import peft
    return {"torch": torch.__version__, "diffusers": diffusers.__version__, "diffusers_commit": DIFFUSERS_COMMIT,
            "peft": peft.__version__}


def run(args):
    import torch
    cuda = not args.tiny
    if cuda and not torch.cuda.is_available():
        sys.exit("hf_qwen_image: no CUDA device (--tiny runs the tiny configuration on the CPU)")
    cfg = dict(TINY if args.tiny else PUBLISHED)
    device, dtype = ("cpu", torch.float32) if args.tiny else ("cuda", torch.bfloat16)
    if args.tiny:
        args.autocast, args.warmup, args.steps = False, 1, 1
    samples = tiny_samples() if args.tiny else load_samples(args.data)[: args.samples]
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)
    model = build_model(cfg, device, dtype, not args.no_checkpointing, args.recompute_blocks)
    base = sum(p.numel() for p in model.parameters())
    if not args.tiny and base != PARAMETERS_20B:
        print(f"hf_qwen_image: {base:,} parameters, docs/spec.md counts {PARAMETERS_20B:,}", file=sys.stderr)
    trainable, adapted = add_lora(model, args.lora_r, args.lora_alpha)
    build_s = time.perf_counter() - t0
    batches = Batches(samples, device, dtype, args.pass_mask, args.seed)
    times, peaks, losses = train(model, trainable, batches, args, cuda)

    shapes = [((x.shape[2] // 2) * (x.shape[3] // 2), s.shape[1]) for _, x, s, _ in batches.items]
    counted, parts = step_flops(cfg, shapes, args.lora_r)
    step_s = statistics.median(times)
    tokens = sum(a + b for a, b in shapes)
    print(json.dumps(dict(versions(), **{
        "impl": "diffusers + PEFT", "variant": args.label, "model": "qwen_image-tiny" if args.tiny else "qwen_image-20b",
        "device": torch.cuda.get_device_name() if cuda else "cpu", "config": cfg,
        "attention_mask": "all ones passed" if args.pass_mask else "none (as encode_prompt passes for unpadded prompts)",
        "autocast_bf16": args.autocast, "checkpointing": not args.no_checkpointing,
        "recompute_blocks": 0 if args.no_checkpointing else (args.recompute_blocks or cfg["num_layers"]),
        "precision": ("frozen weights bf16, LoRA weights fp32 (cast_training_params)" +
                      (", forward under bf16 autocast" if args.autocast else "")) if cuda else "fp32",
        "samples_per_step": len(shapes), "micro_batch": 1, "image_tokens": [a for a, _ in shapes],
        "prompt_lengths": [b for _, b in shapes], "tokens_per_step": tokens,
        "step_s": step_s, "step_s_min": min(times), "step_s_max": max(times), "steps_timed": len(times),
        "warmup": args.warmup, "tokens_per_s": tokens / step_s, "peak_mem_gib": max(peaks) / 2**30,
        "reserved_gib": torch.cuda.max_memory_reserved() / 2**30 if cuda else 0.0,
        "flops_per_step": counted, "flops_parts": parts, "peak_tflops": args.peak_tflops,
        "mfu": counted / step_s / (args.peak_tflops * 1e12),
        "parameters": base, "trainable_params": sum(p.numel() for p in trainable),
        "trainable_dtype": str(trainable[0].dtype), "adapted_linears": adapted, "lora_r": args.lora_r,
        "lora_alpha": args.lora_alpha, "build_s": build_s, "losses": losses,
        "loss_first": losses[0], "loss_last": losses[-1]})))


# ---- both sides ---------------------------------------------------------------------------------

def parallax_side(hf, log_path, warmup_steps):
    """Parallax's row: the median step of its step telemetry from step `warmup_steps` on, priced with
    the FLOPs and tokens of the same batch that the diffusers side counted (step_flops)."""
    events = parallax_events(log_path)
    steps = [e for e in events if e.get("ev") == "step"]
    timed = [e for e in steps if e.get("step", 0) >= warmup_steps]
    if not timed:
        sys.exit(f"compare: no step events from step {warmup_steps} on in {log_path}")
    step_s = statistics.median(e.get("step_ms_max", e.get("step_ms", 0)) for e in timed) / 1e3
    counted, _ = step_flops(hf["config"], list(zip(hf["image_tokens"], hf["prompt_lengths"])), hf["lora_r"])
    units = {}
    for e in events:
        if e.get("ev") == "unit_time":
            u = units.setdefault(e.get("kind", "?"), [0, 0.0, 0.0])
            u[0] += 1
            u[1] += e.get("forward_ms", 0.0)
            u[2] += e.get("backward_ms", 0.0)
    return {"impl": "Parallax", "step_s": step_s, "tokens_per_s": hf["tokens_per_step"] / step_s,
            "mfu": counted / step_s / (hf["peak_tflops"] * 1e12),
            "peak_mem_gib": max(e.get("peak_mem", 0) for e in timed) / 2**30,
            "own_tokens_per_s": statistics.median(e.get("tokens_per_s", 0) for e in timed),
            "own_mfu": statistics.median(e.get("mfu", 0) for e in timed),
            "loss_first": steps[0].get("loss"), "loss_last": steps[-1].get("loss"),
            "steps_timed": len(timed), "units": units}


def compare(hf_path, log_path, warmup_steps=10):
    """One table of both sides (Parallax's steps 10 and later; the diffusers side's timed steps)."""
    with open(hf_path, encoding="utf-8") as f:
        hf = [json.loads(line) for line in f if line.startswith("{")][-1]
    px = parallax_side(hf, log_path, warmup_steps)
    ratio = hf["step_s"] / px["step_s"]
    print("| Implementation | Step s | Tokens/s | MFU | Peak GiB (allocated) | Speed vs diffusers | First / last loss |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r, speed in ((px, ratio), (hf, 1.0)):
        print(f"| {r['impl']} | {r['step_s']:.3f} | {r['tokens_per_s']:,.0f} | {r['mfu'] * 100:.1f}% "
              f"| {r['peak_mem_gib']:.1f} | {speed:.2f}x | {r['loss_first']:.4f} / {r['loss_last']:.4f} |")
    print(f"\nParallax vs diffusers + PEFT: {ratio:.2f}x the steps per second "
          f"({'Parallax faster' if ratio > 1 else 'Parallax slower'}); {hf['samples_per_step']} samples a step "
          f"({hf['tokens_per_step']:,} tokens: image {sum(hf['image_tokens']):,}, prompts {hf['prompt_lengths']}), "
          f"{hf['flops_per_step'] / 1e12:.1f} TFLOP a step counted alike for both; device {hf['device']}, "
          f"torch {hf['torch']}, diffusers {hf['diffusers']} ({hf['diffusers_commit'][:12]}), peft {hf['peft']}; "
          f"diffusers' prompt mask: {hf['attention_mask']}. The losses differ: each side draws its own weights.")
    if px["units"]:
        print("\nParallax unit times after training (ms, forward / backward, each unit alone on one micro-batch):")
        for kind, (n, fwd, bwd) in sorted(px["units"].items()):
            print(f"- {kind} x {n}: {fwd:.1f} / {bwd:.1f}")
    print(json.dumps({"comparison": {"parallax": px, "diffusers": {k: hf[k] for k in (
        "step_s", "tokens_per_s", "mfu", "peak_mem_gib", "loss_first", "loss_last")}, "speedup": ratio}}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="build/qi-bench/latents", help="the folder of latent shards")
    ap.add_argument("--samples", type=int, default=4, help="samples per optimizer step (one per micro-batch)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--lora-r", type=int, default=32)
    ap.add_argument("--lora-alpha", type=float, default=32.0)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-autocast", dest="autocast", action="store_false",
                    help="run the forward without bf16 autocast (PEFT casts each adapter's input to fp32)")
    ap.add_argument("--pass-mask", action="store_true",
                    help="pass an all-ones encoder_hidden_states_mask (encode_prompt passes none for unpadded prompts)")
    ap.add_argument("--no-checkpointing", action="store_true")
    ap.add_argument("--recompute-blocks", type=int, default=0,
                    help="checkpoint only the first N blocks (the others keep their activations); 0: every block")
    ap.add_argument("--label", default="default", help="a name for this configuration in the JSON line")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--tiny", action="store_true", help="the tiny configuration on the CPU in fp32 (a check)")
    ap.add_argument("--compare", nargs=2, metavar=("HF_JSONL", "PARALLAX_LOG"))
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    else:
        run(args)


if __name__ == "__main__":
    main()
