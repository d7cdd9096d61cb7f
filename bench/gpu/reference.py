#!/usr/bin/env python3
"""PyTorch reference of Parallax's models for side-by-side throughput on the same GPUs.

--model 124m and 1.3b are docs/models.md's gpt: pre-norm blocks with separate q/k/v/proj Linear
layers (with bias), GELU (tanh), learned positions, LayerNorm with bias, an untied head without
bias; weights N(0, 0.02), proj and fc2 N(0, 0.02 / sqrt(2 L)), biases 0. The step is the worker's:
bf16 autocast over fp32 parameters (FSDP2: bf16 parameters, fp32 reduction, as torchtitan does),
causal scaled_dot_product_attention, AdamW (betas 0.9/0.95, weight decay 0.1 on matrices and
embeddings, eps 1e-8), gradient clipping at 1.0, linear warm-up then cosine decay, random tokens.

--model mmdit-base and mmdit-base-1024px are docs/models.md's mmdit with the dimensions of the
`base` and `base-1024px` presets (core/spec/ModelKinds.cpp), trained the same way on data drawn on
the GPU: two-stream joint blocks (adaLN modulation from the timestep embedding, joint attention over
[text; image], the last block's text stream giving keys and values only), the adaLN head, and the
rectified-flow loss (t = sigmoid(n), x_t = (1 - t) x0 + t e, target e - x0, mean squared error) on
random images, noise and caption tokens. Tokens counted: T + P per sample; text_tokens_per_s and
image_tokens_per_s are given apart.
The script asserts that the model holds docs/models.md's parameter count, and prints it.

One process per GPU. With more than one, start it under mpirun (the process group is set up from
OpenMPI's environment, the rendezvous port agreed over mpi4py when present):

    python3 bench/gpu/reference.py --model 124m --mode eager
    python3 bench/gpu/reference.py --model mmdit-base --mode compile --activation-checkpointing
    mpirun -np 2 -x NCCL_NVLS_ENABLE=0 python3 bench/gpu/reference.py --model 1.3b --mode fsdp2

Prints one JSON line (rank 0): tokens/s is the median over the timed steps, counted once per
data-parallel replica; MFU uses docs/models.md's FLOPs (3 x forward, attention 4 S^2 C per block)
over 989 TFLOP/s bf16 dense per GPU (H100/H200; --peak-tflops to change).
"""

import argparse
import datetime
import json
import math
import os
import socket
import statistics
import sys
import time

import torch
import torch.utils.checkpoint
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "124m": dict(layers=12, dim=768, heads=12, ffn=3072, vocab=50304, seq=1024),
    "1.3b": dict(layers=24, dim=2048, heads=16, ffn=8192, vocab=50304, seq=1024),
}
# The mmdit `base` preset of core/spec/ModelKinds.cpp and its long-sequence form (P = (image / patch)^2
# image tokens).
MMDIT_PRESETS = {
    "mmdit-base": dict(layers=12, dim=768, heads=12, ffn=3072, vocab=256, text=64, image=64, channels=4, patch=2),
    "mmdit-base-1024px": dict(layers=12, dim=768, heads=12, ffn=3072, vocab=256, text=64, image=128, channels=16,
                              patch=2),
}
# Samples per GPU per step unless --micro-batch says otherwise.
LONG_SEQUENCE = ("mmdit-base-1024px",)
MODES = ("eager", "compile", "ddp", "ddp-compile", "fsdp2")


class Block(nn.Module):
    def __init__(self, dim, heads, ffn):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, ffn)
        self.fc2 = nn.Linear(ffn, dim)

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln1(x)
        # (B, T, C) -> (B, H, T, C / H)
        q, k, v = (m(h).view(b, t, self.heads, c // self.heads).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, dim, heads, ffn, vocab, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, ffn) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        out_std = 0.02 / math.sqrt(2 * layers)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            elif name.endswith("proj.weight") or name.endswith("fc2.weight"):
                nn.init.normal_(p, 0.0, out_std)
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, tokens, labels):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos.weight[:t]
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.reshape(-1))


def patchify(images, patch):
    """(B, ch, S, S) -> (B, P, ch * patch * patch), patches in row order, values (ch, py, px)."""
    b, c, s, _ = images.shape
    g = s // patch
    return images.reshape(b, c, g, patch, g, patch).permute(0, 2, 4, 1, 3, 5).reshape(b, g * g, c * patch * patch)


def unpatchify(patches, patch, channels, size):
    b, g = patches.shape[0], size // patch
    return patches.reshape(b, g, g, channels, patch, patch).permute(0, 3, 1, 4, 2, 5).reshape(b, channels, size, size)


def timestep_features(t):
    """256 sinusoidal features of 1000 t: 128 cos then 128 sin, frequencies exp(-ln(10000) i / 128)."""
    half = 128
    freqs = torch.exp(torch.arange(half, device=t.device, dtype=torch.float32) * (-math.log(10000.0) / half))
    args = (t.float() * 1000.0)[:, None] * freqs[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=1)


def init_weights(model, layers, zero=()):
    """docs/models.md: Linear and Embedding weights (and learned positions) N(0, 0.02), biases 0,
    LayerNorm 1 and 0, proj and fc2 N(0, 0.02 / sqrt(2 L)), the modules in `zero` all zero."""
    out_std = 0.02 / math.sqrt(2 * layers)
    zeroed = {id(p) for m in zero for p in m.parameters()}
    for name, module in model.named_modules():
        for pname, p in module.named_parameters(recurse=False):
            if id(p) in zeroed or pname == "bias":
                nn.init.zeros_(p)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(p)
            elif isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in ("proj", "fc2"):
                nn.init.normal_(p, 0.0, out_std)
            else:
                nn.init.normal_(p, 0.0, 0.02)


def split_heads(x, heads):
    b, s, c = x.shape
    return x.view(b, s, heads, c // heads).transpose(1, 2)  # (B, H, S, C / H)


def merge_heads(x):
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


class JointStream(nn.Module):
    """One stream (text or image) of a joint block; `context_only`: keys and values alone."""

    def __init__(self, dim, ffn, context_only=False):
        super().__init__()
        self.context_only = context_only
        self.mod = nn.Linear(dim, (2 if context_only else 6) * dim)
        if not context_only:
            self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        if not context_only:
            self.proj = nn.Linear(dim, dim)
            self.fc1 = nn.Linear(dim, ffn)
            self.fc2 = nn.Linear(ffn, dim)

    def modulation(self, sc):
        return self.mod(sc).unsqueeze(1).chunk(2 if self.context_only else 6, dim=-1)  # (B, 1, C) each

    def mlp(self, x, shift, scale, gate):
        h = F.layer_norm(x, x.shape[-1:]) * (1 + scale) + shift
        return x + gate * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class JointBlock(nn.Module):
    def __init__(self, dim, heads, ffn, last):
        super().__init__()
        self.heads = heads
        self.last = last
        self.text = JointStream(dim, ffn, context_only=last)
        self.image = JointStream(dim, ffn)

    def forward(self, xt, xi, c):
        sc = F.silu(c)
        mt = self.text.modulation(sc)
        mi = self.image.modulation(sc)
        ht = F.layer_norm(xt, xt.shape[-1:]) * (1 + mt[1]) + mt[0]  # (B, T, C)
        hi = F.layer_norm(xi, xi.shape[-1:]) * (1 + mi[1]) + mi[0]  # (B, P, C)
        k = split_heads(torch.cat([self.text.k(ht), self.image.k(hi)], dim=1), self.heads)  # (B, H, T+P, C/H)
        v = split_heads(torch.cat([self.text.v(ht), self.image.v(hi)], dim=1), self.heads)
        if self.last:
            # Only the image tokens query [text; image]; the text stream ends here.
            a = merge_heads(F.scaled_dot_product_attention(split_heads(self.image.q(hi), self.heads), k, v))
            xi = xi + mi[2] * self.image.proj(a)
            return xt, self.image.mlp(xi, mi[3], mi[4], mi[5])
        q = split_heads(torch.cat([self.text.q(ht), self.image.q(hi)], dim=1), self.heads)
        a = merge_heads(F.scaled_dot_product_attention(q, k, v))  # (B, T+P, C)
        at, ai = a.split([xt.shape[1], xi.shape[1]], dim=1)
        xt = xt + mt[2] * self.text.proj(at)
        xi = xi + mi[2] * self.image.proj(ai)
        return self.text.mlp(xt, mt[3], mt[4], mt[5]), self.image.mlp(xi, mi[3], mi[4], mi[5])


class Mmdit(nn.Module):
    def __init__(self, layers, dim, heads, ffn, vocab, text, image, channels, patch):
        super().__init__()
        self.patch, self.channels, self.image_size = patch, channels, image
        tokens = (image // patch) ** 2
        self.patch_in = nn.Linear(channels * patch * patch, dim)
        self.image_pos = nn.Parameter(torch.empty(tokens, dim))
        self.text_tok = nn.Embedding(vocab, dim)
        self.text_pos = nn.Parameter(torch.empty(text, dim))
        self.time_in = nn.Linear(256, dim)
        self.time_out = nn.Linear(dim, dim)
        self.blocks = nn.ModuleList(JointBlock(dim, heads, ffn, last=i + 1 == layers) for i in range(layers))
        self.head_mod = nn.Linear(dim, 2 * dim)
        self.head_out = nn.Linear(dim, channels * patch * patch)
        init_weights(self, layers, zero=[b.text.mod for b in self.blocks] + [b.image.mod for b in self.blocks]
                     + [self.head_mod, self.head_out])

    def forward(self, tokens, x0, t, noise):
        x0, noise, t = x0.float(), noise.float(), t.float()
        dtype = self.patch_in.weight.dtype
        tb = t.view(-1, 1, 1, 1)
        xt = (1 - tb) * x0 + tb * noise
        xi = self.patch_in(patchify(xt.to(dtype), self.patch)) + self.image_pos  # (B, P, C)
        xs = self.text_tok(tokens) + self.text_pos[: tokens.shape[1]]            # (B, T, C)
        c = self.time_out(F.silu(self.time_in(timestep_features(t).to(dtype))))  # (B, C)
        for block in self.blocks:
            xs, xi = run_block(self, block, xs, xi, c)
        shift, scale = self.head_mod(F.silu(c)).unsqueeze(1).chunk(2, dim=-1)
        h = F.layer_norm(xi, xi.shape[-1:]) * (1 + scale) + shift
        v = unpatchify(self.head_out(h), self.patch, self.channels, self.image_size)
        return F.mse_loss(v.float(), noise - x0)


def run_block(model, block, *inputs):
    """One block, recomputed in backward where the model's `checkpoint` is set (and autograd records)."""
    if getattr(model, "checkpoint", False) and torch.is_grad_enabled():
        return torch.utils.checkpoint.checkpoint(block, *inputs, use_reentrant=False)
    return block(*inputs)


def mmdit_params(layers, dim, heads, ffn, vocab, text, image, channels, patch):
    c, f, p, q = dim, ffn, (image // patch) ** 2, channels * patch * patch
    embed = (q * c + c) + p * c + vocab * c + text * c + (256 * c + c) + (c * c + c)
    stream = 6 * c * c + 6 * c + 4 * c * c + 4 * c + 2 * c * f + f + c
    last = stream + (2 * c * c + 2 * c + 2 * c * c + 2 * c)
    head = (2 * c * c + 2 * c) + (c * q + q)
    return embed + (layers - 1) * 2 * stream + last + head


def mmdit_forward_flops(layers, dim, heads, ffn, vocab, text, image, channels, patch):
    """docs/models.md, per sample: 2 x every Linear's multiply-adds + attention 4 S^2 C per block."""
    C, F_, L, T, P, Q = dim, ffn, layers, text, (image // patch) ** 2, channels * patch * patch
    S = T + P
    macs = (P * Q * C + 256 * C + C * C
            + (L - 1) * (2 * 6 * C * C + S * (4 * C * C + 2 * C * F_))
            + (8 * C * C + 2 * T * C * C + P * (4 * C * C + 2 * C * F_))
            + 2 * C * C + P * C * Q)
    attention = (L - 1) * 4 * S * S * C + 4 * P * S * C
    return 2.0 * macs + attention


def flops_per_token(layers, dim, heads, ffn, vocab, seq):
    """docs/models.md: 3 x forward; forward = 2 x every Linear's multiply-adds + 4 S^2 C per block."""
    linear = layers * (4 * dim * dim + 2 * dim * ffn) + dim * vocab
    attention = layers * 4 * seq * dim  # 4 S^2 C per sample over S tokens
    return 3.0 * (2.0 * linear + attention)


def learning_rate(step, steps, warmup, lr, min_lr):
    if warmup > 0 and step < warmup:
        return lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))


def setup_distributed(group):
    """(rank, world, local rank) from OpenMPI's environment; a process group when `group`."""
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    if local >= torch.cuda.device_count():
        sys.exit(f"local rank {local} has no GPU: this host shows {torch.cuda.device_count()}")
    torch.cuda.set_device(local)
    if group:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        if "MASTER_PORT" not in os.environ:
            port = 29531
            try:
                from mpi4py import MPI  # agrees on a free port; optional

                if rank == 0:
                    with socket.socket() as s:
                        s.bind(("127.0.0.1", 0))
                        port = s.getsockname()[1]
                port = MPI.COMM_WORLD.bcast(port, root=0)
            except ImportError:
                pass
            os.environ["MASTER_PORT"] = str(port)
        torch.distributed.init_process_group(
            "nccl", rank=rank, world_size=world, device_id=torch.device("cuda", local),
            timeout=datetime.timedelta(minutes=5))
    return rank, world, local


MODELS = sorted(PRESETS) + sorted(MMDIT_PRESETS)


def kind_of(name):
    return "mmdit" if name in MMDIT_PRESETS else "gpt"


def build(args, world, local):
    kind = kind_of(args.model)
    torch.manual_seed(args.seed)
    params = expected = None
    if kind == "gpt":
        dims = PRESETS[args.model]
        model = Gpt(**dims)
    else:
        dims = MMDIT_PRESETS[args.model]
        model = Mmdit(**dims)
        params = sum(p.numel() for p in model.parameters())
        expected = mmdit_params(**dims)
        assert params == expected, f"{args.model}: {params} parameters, docs/models.md gives {expected}"
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.checkpoint = args.activation_checkpointing
    model = model.cuda()
    # FSDP2 shards per transformer block, as the worker's ZeRO-3 gathers per unit.
    units = list(model.blocks)
    mode = args.mode
    if mode in ("ddp", "ddp-compile"):
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[local], bucket_cap_mb=args.bucket_mb, gradient_as_bucket_view=True)
    elif mode == "fsdp2":
        try:
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        except ImportError:
            from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cuda", (world,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for block in units:
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
    if mode in ("compile", "ddp-compile"):
        model = torch.compile(model)
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    other = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": other, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8,
                                  **({"fused": True} if args.optimizer == "fused" else {"foreach": True}))
    return model, optimizer, dims, {"params": params, "trainable_params": trainable}


def make_batch(kind, dims, micro_batch, generator):
    """One step's synthetic inputs, drawn on the GPU: the model's positional arguments."""
    cuda = dict(device="cuda", generator=generator)
    if kind == "gpt":
        batch = torch.randint(0, dims["vocab"], (micro_batch, dims["seq"] + 1), **cuda)
        return batch[:, :-1], batch[:, 1:]
    tokens = torch.randint(0, dims["vocab"], (micro_batch, dims["text"]), **cuda)
    images = torch.randn(micro_batch, dims["channels"], dims["image"], dims["image"], **cuda)
    t = torch.sigmoid(torch.randn(micro_batch, **cuda))  # rectified flow: t = sigmoid(n), n ~ N(0, 1)
    return tokens, images, t, torch.randn(images.shape, **cuda)


def clip_gradients(model, max_norm):
    params = [p for p in model.parameters() if p.grad is not None]
    if hasattr(torch.nn.utils, "get_total_norm"):
        norm = torch.nn.utils.get_total_norm([p.grad for p in params], 2.0)
        if hasattr(norm, "full_tensor"):  # DTensor under FSDP2: the norm over every shard
            norm = norm.full_tensor()
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
        return norm
    return torch.nn.utils.clip_grad_norm_(params, max_norm)


def gpt_result_line(args, kind, dims, counts, world, local, step_s, times, losses, peak):
    seq = dims["seq"]
    tokens_per_step = world * args.micro_batch * seq
    tokens_per_s = tokens_per_step / step_s
    fpt = flops_per_token(**dims)
    return {
        "impl": "pytorch", "model": "gpt-" + args.model, "mode": args.mode, "gpus": world,
        "micro_batch": args.micro_batch, "global_batch": world * args.micro_batch, "seq": seq,
        "steps": args.steps, "warmup": args.warmup,
        "tokens_per_s": round(tokens_per_s, 1), "step_ms": round(step_s * 1e3, 3),
        "step_ms_min": round(min(times) * 1e3, 3),
        "mfu": round(fpt * tokens_per_s / (args.peak_tflops * 1e12 * world), 4),
        "peak_mem_gib": round(peak / 2**30, 2),
        "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4),
        "flops_per_token": fpt, "torch": torch.__version__, "device": torch.cuda.get_device_name(local),
        "tag": args.tag,
    }


def result_line(args, kind, dims, counts, world, local, step_s, times, losses, peak):
    """mmdit: tokens/s as Parallax counts them (T + P per sample), text and image tokens/s apart, MFU
    from 3 x docs/models.md's forward FLOPs per sample."""
    text, image = dims["text"], (dims["image"] // dims["patch"]) ** 2
    samples_per_s = world * args.micro_batch / step_s
    counted = text + image
    fps = 3.0 * mmdit_forward_flops(**dims)
    return {
        "impl": "pytorch", "model": args.model, "mode": args.mode, "gpus": world,
        "micro_batch": args.micro_batch, "global_batch": world * args.micro_batch, "seq": text + image,
        "text_tokens": text, "image_tokens": image, "steps": args.steps, "warmup": args.warmup,
        "tokens_per_s": round(samples_per_s * counted, 1),
        "text_tokens_per_s": round(samples_per_s * text, 1), "image_tokens_per_s": round(samples_per_s * image, 1),
        "samples_per_s": round(samples_per_s, 2),
        "step_ms": round(step_s * 1e3, 3), "step_ms_min": round(min(times) * 1e3, 3),
        "mfu": round(fps * samples_per_s / (args.peak_tflops * 1e12 * world), 4),
        "peak_mem_gib": round(peak / 2**30, 2),
        "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4),
        "params": counts["params"], "trainable_params": counts["trainable_params"],
        "flops_per_sample": fps, "flops_per_token": fps / counted,
        "activation_checkpointing": args.activation_checkpointing,
        "torch": torch.__version__, "device": torch.cuda.get_device_name(local), "tag": args.tag,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="124m")
    parser.add_argument("--mode", choices=MODES, default="eager")
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (compilation, allocator)")
    parser.add_argument("--micro-batch", type=int, default=None, help="sequences (samples) per GPU per step "
                        "(default 8 for 1.3b and the long-sequence presets, 16 for the others)")
    parser.add_argument("--activation-checkpointing", action="store_true", help="mmdit: recompute each "
                        "block in backward (torch.utils.checkpoint, non-reentrant), as "
                        "train.activation_checkpointing does per unit")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--lr-warmup", type=int, default=10, help="steps of linear warm-up before the cosine")
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket size (Parallax's bucket_mb)")
    parser.add_argument("--optimizer", choices=("fused", "foreach"), default="fused")
    parser.add_argument("--peak-tflops", type=float, default=989.0, help="dense bf16 peak per GPU")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--tag", default="", help="free text copied into the result line")
    parser.add_argument("--profile-out", default="", help="Chrome trace of 5 steps after the warm-up "
                        "(torch.profiler: operators and CUDA kernels), as the worker's --profile-steps writes")
    args = parser.parse_args()
    kind = kind_of(args.model)
    if args.micro_batch is None:
        args.micro_batch = 8 if args.model == "1.3b" or args.model in LONG_SEQUENCE else 16
    if args.activation_checkpointing and kind == "gpt":
        parser.error("--activation-checkpointing applies to the mmdit models only")
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")

    distributed = args.mode in ("ddp", "ddp-compile", "fsdp2")
    if not distributed and int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) > 1:
        sys.exit(f"--mode {args.mode} runs on one GPU; use ddp, ddp-compile or fsdp2 under mpirun")
    rank, world, local = setup_distributed(distributed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model, optimizer, dims, counts = build(args, world, local)
    if rank == 0 and counts["params"] is not None:
        print(f"{args.model}: {counts['params']:,} parameters ({counts['trainable_params']:,} trainable), "
              "as docs/models.md counts them", file=sys.stderr, flush=True)
    total = args.warmup + args.steps
    generator = torch.Generator(device="cuda").manual_seed(args.seed + rank)
    autocast = args.mode != "fsdp2"  # FSDP2 computes in its bf16 parameters

    times, losses = [], []
    torch.cuda.reset_peak_memory_stats()
    profiler = None
    for step in range(total):
        if args.profile_out and step == args.warmup:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                          torch.profiler.ProfilerActivity.CUDA])
            profiler.__enter__()
        if profiler is not None and step == args.warmup + 5:
            profiler.__exit__(None, None, None)
            profiler.export_chrome_trace(args.profile_out)
            profiler = None
        batch = make_batch(kind, dims, args.micro_batch, generator)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, total, args.lr_warmup, args.lr, 0.0)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(*batch)
        loss.backward()
        clip_gradients(model, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if step >= args.warmup:
            times.append(elapsed)
            losses.append(loss.item())

    peak = torch.tensor([float(torch.cuda.max_memory_allocated())], device="cuda")
    slowest = torch.tensor([statistics.median(times)], device="cuda")
    if distributed:
        torch.distributed.all_reduce(peak, op=torch.distributed.ReduceOp.MAX)
        torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX)
    step_s = slowest.item()
    if rank == 0:
        line = (gpt_result_line if kind == "gpt" else result_line)(args, kind, dims, counts, world, local, step_s,
                                                                  times, losses, peak.item())
        print(json.dumps(line), flush=True)
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
