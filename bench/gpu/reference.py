#!/usr/bin/env python3
"""PyTorch reference of Parallax's models for side-by-side throughput on the same GPUs.

--model 124m and 1.3b are docs/models.md's gpt: pre-norm blocks with separate q/k/v/proj Linear
layers (with bias), GELU (tanh), learned positions, LayerNorm with bias, an untied head without
bias; weights N(0, 0.02), proj and fc2 N(0, 0.02 / sqrt(2 L)), biases 0. The step is the worker's:
bf16 autocast over fp32 parameters (FSDP2: bf16 parameters, fp32 reduction, as torchtitan does),
causal scaled_dot_product_attention, AdamW (betas 0.9/0.95, weight decay 0.1 on matrices and
embeddings, eps 1e-8), gradient clipping at 1.0, linear warm-up then cosine decay, random tokens.

One process per GPU. With more than one, start it under mpirun (the process group is set up from
OpenMPI's environment, the rendezvous port agreed over mpi4py when present):

    python3 bench/gpu/reference.py --model 124m --mode eager
    python3 bench/gpu/reference.py --model 1.3b --mode compile
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
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {
    "124m": dict(layers=12, dim=768, heads=12, ffn=3072, vocab=50304, seq=1024),
    "1.3b": dict(layers=24, dim=2048, heads=16, ffn=8192, vocab=50304, seq=1024),
}
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


MODELS = sorted(PRESETS)


def build(args, world, local):
    torch.manual_seed(args.seed)
    dims = PRESETS[args.model]
    model = Gpt(**dims).cuda()
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
    return model, optimizer, dims


def make_batch(dims, micro_batch, generator):
    """One step's random tokens, drawn on the GPU: the model's positional arguments."""
    batch = torch.randint(0, dims["vocab"], (micro_batch, dims["seq"] + 1), device="cuda", generator=generator)
    return batch[:, :-1], batch[:, 1:]


def clip_gradients(model, max_norm):
    params = [p for p in model.parameters() if p.grad is not None]
    if hasattr(torch.nn.utils, "get_total_norm"):
        norm = torch.nn.utils.get_total_norm([p.grad for p in params], 2.0)
        if hasattr(norm, "full_tensor"):  # DTensor under FSDP2: the norm over every shard
            norm = norm.full_tensor()
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
        return norm
    return torch.nn.utils.clip_grad_norm_(params, max_norm)


def result_line(args, dims, world, local, step_s, times, losses, peak):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="124m")
    parser.add_argument("--mode", choices=MODES, default="eager")
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (compilation, allocator)")
    parser.add_argument("--micro-batch", type=int, default=None, help="sequences per GPU per step "
                        "(default 8 for 1.3b, 16 for 124m)")
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
    if args.micro_batch is None:
        args.micro_batch = 8 if args.model == "1.3b" else 16
    if not torch.cuda.is_available():
        sys.exit("no CUDA device")

    distributed = args.mode in ("ddp", "ddp-compile", "fsdp2")
    if not distributed and int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) > 1:
        sys.exit(f"--mode {args.mode} runs on one GPU; use ddp, ddp-compile or fsdp2 under mpirun")
    rank, world, local = setup_distributed(distributed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model, optimizer, dims = build(args, world, local)
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
        batch = make_batch(dims, args.micro_batch, generator)
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
        line = result_line(args, dims, world, local, step_s, times, losses, peak.item())
        print(json.dumps(line), flush=True)
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
