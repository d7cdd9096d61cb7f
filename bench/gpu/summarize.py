#!/usr/bin/env python3
"""Turns packaging/device/run.sh's results into the markdown table of docs/benchmarks.md.

    python3 bench/gpu/summarize.py OUT/results > benchmarks.md

Reads results/manifest.jsonl (one line per run: kind, name, GPUs, exit code, command), Parallax's
telemetry in results/parallax-NAME.log ("@plx " JSON lines; the median over step events after the
warm-up) and the PyTorch reference's lines in results/reference.jsonl. Parallax rows are compared
with the reference runs of the same model, GPU count and global batch.
"""

import json
import re
import os
import statistics
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

PREFIX = "@plx "
WARMUP_STEPS = 10
MODEL_NAMES = {("gpt", "base"): "gpt-124m", ("gpt", "1b"): "gpt-1.3b"}


def read_jsonl(path):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def telemetry(path):
    """The worker's events from a log (lines may carry a launcher tag before the prefix)."""
    events = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            at = line.find(PREFIX)
            if at < 0:
                continue
            try:
                events.append(json.loads(line[at + len(PREFIX):]))
            except json.JSONDecodeError:
                pass
    return events


def spec_of(repo, name):
    path = os.path.join(repo, "bench", "gpu", "specs", name + ".toml")
    if tomllib is None or not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        return tomllib.load(f)


def layout_of(spec):
    p = spec.get("parallel", {})
    parts = []
    for key in ("dp", "tp", "pp"):
        if p.get(key, 1) > 1:
            parts.append(f"{key}={p[key]}")
    if p.get("zero", 0):
        parts.append(f"ZeRO-{p['zero']}")
    if p.get("pp", 1) > 1:
        t = spec.get("train", {})
        m = t.get("global_batch", 0) // max(1, p.get("dp", 1) * t.get("micro_batch", 1))
        parts.append(f"{p.get('schedule', '1f1b')} m={m}")
    if p.get("reduce_dtype", "fp32") != "fp32":
        parts.append(f"{p['reduce_dtype']} reduction")
    layout = " ".join(parts) or "1 GPU"
    # Telemetry settings other than the benchmark specs' usual (a device sample a second, no spans).
    t = spec.get("telemetry", {})
    sample, spans = t.get("device_sample_ms", 1000), t.get("span_every", 0)
    if sample >= 3600000 and not spans:
        layout += ", telemetry off"
    elif sample != 1000 or spans:
        layout += f", telemetry: device sample every {sample} ms, spans every {spans or 'no'} steps"
    return layout


# The worker's end-of-run line per rank: medians of the parts of its steady steps.
BREAKDOWN = re.compile(
    r"rank (\d+), steps (\d+) to (\d+), medians of each part of the step \([^)]*\): step ([0-9.]+) ms; "
    r"forward and backward ([0-9.]+), waiting for gradient reductions after backward ([0-9.]+), "
    r"gradient norm and its sum over the stages and shards ([0-9.]+), optimizer ([0-9.]+), "
    r"loss reduction ([0-9.]+) ms")


def breakdowns(events):
    """(rank, step ms, forward and backward, reduction wait, norm and its sum, optimizer, loss) per rank."""
    out = []
    for e in events:
        m = BREAKDOWN.search(e.get("message", "")) if e.get("ev") == "log" else None
        if m:
            out.append((int(m.group(1)),) + tuple(float(m.group(i)) for i in range(4, 10)))
    return sorted(out)


def parallax_row(entry, results, repo):
    spec = spec_of(repo, entry["name"])
    model = spec.get("model", {})
    train = spec.get("train", {})
    row = {
        "model": MODEL_NAMES.get((model.get("kind"), model.get("preset")),
                                 f"{model.get('kind', '?')}-{model.get('preset', '?')}"),
        "layout": layout_of(spec),
        "impl": "Parallax",
        "gpus": entry["gpus"],
        "global_batch": train.get("global_batch"),
        "micro_batch": train.get("micro_batch"),
        "command": entry["command"],
        "rc": entry["rc"],
    }
    log = os.path.join(results, os.path.basename(entry["log"]))
    events = telemetry(log) if os.path.exists(log) else []
    steps = [e for e in events if e.get("ev") == "step"]
    row["breakdown"] = breakdowns(events)
    timed = [e for e in steps if e.get("step", 0) >= WARMUP_STEPS] or steps
    if timed:
        row["tokens_per_s"] = statistics.median(e.get("tokens_per_s", 0) for e in timed)
        row["step_ms"] = statistics.median(e.get("step_ms_max", e.get("step_ms", 0)) for e in timed)
        row["mfu"] = statistics.median(e.get("mfu", 0) for e in timed)
        peaks = [e.get("peak_mem", 0) for e in timed]
        row["peak_mem_gib"] = max(peaks) / 2**30 if peaks and max(peaks) > 0 else None
        row["steps"] = len(timed)
    return row


def reference_rows(results, manifest):
    commands = {}
    for entry in manifest:
        if entry.get("kind") == "reference":
            commands[(entry["name"], entry["gpus"])] = entry["command"]
    rows = []
    for r in read_jsonl(os.path.join(results, "reference.jsonl")):
        size = r["model"].split("-", 1)[1]
        rows.append({
            "model": r["model"],
            "layout": {"eager": "1 GPU", "compile": "1 GPU"}.get(r["mode"], f"dp={r['gpus']}"),
            "impl": "PyTorch " + {"eager": "eager", "compile": "torch.compile", "ddp": "DDP",
                                  "ddp-compile": "DDP + torch.compile", "fsdp2": "FSDP2"}.get(r["mode"], r["mode"]),
            "gpus": r["gpus"],
            "global_batch": r["global_batch"],
            "micro_batch": r["micro_batch"],
            "tokens_per_s": r["tokens_per_s"],
            "step_ms": r["step_ms"],
            "mfu": r["mfu"],
            "peak_mem_gib": r.get("peak_mem_gib"),
            "command": commands.get((f"{size}:{r['mode']}", r["gpus"]), ""),
            "rc": 0,
            "device": r.get("device", ""),
            "torch": r.get("torch", ""),
        })
    return rows


def fmt(value, spec):
    return "—" if value is None else format(value, spec)


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "device-out/results"
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    manifest = read_jsonl(os.path.join(results, "manifest.jsonl"))
    rows = [parallax_row(e, results, repo) for e in manifest if e.get("kind") == "parallax"]
    refs = reference_rows(results, manifest)
    rows += refs

    devices = sorted({r["device"] for r in refs if r.get("device")})
    torches = sorted({r["torch"] for r in refs if r.get("torch")})
    print("| Model | Layout | Implementation | GPUs | Batch (seqs) | Tokens/s | Step ms | MFU | Peak GiB | vs PyTorch |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    order = {"Parallax": 0}
    rows.sort(key=lambda r: (r["model"], r["gpus"], r["layout"], order.get(r["impl"], 1), r["impl"]))
    for r in rows:
        if "tokens_per_s" not in r:
            status = f"failed (exit {r['rc']})" if r["rc"] else "no step telemetry"
            print(f"| {r['model']} | {r['layout']} | {r['impl']} | {r['gpus']} | {r['global_batch']} | {status} "
                  "| | | | |")
            continue
        versus = "—"
        if r["impl"] == "Parallax":
            same = [x for x in refs if x["model"] == r["model"] and x["gpus"] == r["gpus"]
                    and x["global_batch"] == r["global_batch"]]
            if same:
                best = max(same, key=lambda x: x["tokens_per_s"])
                versus = f"{r['tokens_per_s'] / best['tokens_per_s']:.2f}x {best['impl'].replace('PyTorch ', '')}"
        print(f"| {r['model']} | {r['layout']} | {r['impl']} | {r['gpus']} | {r['global_batch']} "
              f"| {fmt(r['tokens_per_s'], ',.0f')} | {fmt(r['step_ms'], '.1f')} | {fmt(r['mfu'] * 100, '.1f')}% "
              f"| {fmt(r.get('peak_mem_gib'), '.1f')} | {versus} |")
    print()
    print(f"Tokens/s: median over the timed steps (Parallax: steps {WARMUP_STEPS} and later of its step "
          "telemetry; PyTorch: 30 steps after 10 warm-up steps), counted once per data-parallel replica. "
          "MFU: docs/models.md FLOPs (3 x forward, attention 4 S^2 C per block) over 989 TFLOP/s bf16 dense "
          "per GPU. bf16 autocast over fp32 weights (FSDP2: bf16 weights, fp32 reduction).")
    if devices or torches:
        print(f"Hardware and software: {', '.join(devices)}; PyTorch {', '.join(torches)}.")
    split = [r for r in rows if r.get("breakdown")]
    if split:
        print()
        print("Where the steady steps went (each rank's medians, CUDA events on its compute stream; ms):")
        print()
        print("| Model | Layout | Rank | Step | Forward and backward | Waiting for reductions "
              "| Norm and its sum over stages and shards | Optimizer | Loss reduction |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in split:
            for rank, step, compute, wait, norm, update, loss in r["breakdown"]:
                print(f"| {r['model']} | {r['layout']} | {rank} | {step:.2f} | {compute:.2f} | {wait:.2f} "
                      f"| {norm:.2f} | {update:.2f} | {loss:.2f} |")
    print()
    print("Commands (from the repository root, NCCL_NVLS_ENABLE=0):")
    print()
    for r in rows:
        if r.get("command"):
            print(f"- {r['impl']} {r['model']} {r['layout']}: `{r['command']}`")


if __name__ == "__main__":
    main()
