#!/usr/bin/env python3
"""Where a step's GPU time goes, from Chrome traces (the worker's --profile-steps, reference.py's
--profile-out): CUDA kernels grouped by name, per step, side by side for several traces.

    python3 bench/gpu/kernels.py --steps 5 parallax=trace-a.json pytorch=trace-b.json [--top 25]

Per trace: kernel time per step, the busy fraction of the traced window (union of kernel intervals
over the window from the first to the last kernel), kernel launches per step; then one row per
kernel group (the name up to its template arguments) with milliseconds per step in each trace, and
the kernel time and launches per step of each launching operator.
"""

import argparse
import json
import re
from collections import defaultdict


def load(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def kernels(events):
    return [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]


def launching_operators(events):
    """correlation id -> the innermost CPU operator around the kernel's launch call."""
    ops = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            ops[e.get("tid")].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("name", "?")))
    found = {}
    for e in events:
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            t = float(e["ts"])
            inner = [o for o in ops.get(e.get("tid"), []) if o[0] <= t <= o[1]]
            found[e["args"]["correlation"]] = min(inner, key=lambda o: o[1] - o[0])[2] if inner else e.get("name", "?")
    return found


def time_by_operator(events, found):
    """Kernel milliseconds summed by the operator that launched them."""
    owner = launching_operators(events)
    per = defaultdict(float)
    for k in found:
        per[owner.get(k.get("args", {}).get("correlation"), "(launch not traced)")] += float(k["dur"])
    return per


def launches_by_operator(events, found):
    """Kernel launches counted by the operator that launched them."""
    owner = launching_operators(events)
    per = defaultdict(float)
    for k in found:
        per[owner.get(k.get("args", {}).get("correlation"), "(launch not traced)")] += 1.0
    return per


def idle_causes(events, found, min_gap_us=20.0):
    """GPU idle time (gaps of at least min_gap_us between kernels) by the CPU operator that launched
    the kernel ending each gap: the innermost operator around its launch call on that thread."""
    owner = launching_operators(events)
    causes = defaultdict(float)
    end = None
    for k in sorted(found, key=lambda e: float(e["ts"])):
        start = float(k["ts"])
        if end is not None and start - end >= min_gap_us:
            causes[owner.get(k.get("args", {}).get("correlation"), "(launch not traced)")] += start - end
        end = max(end or 0.0, start + float(k["dur"]))
    return causes


def group(name):
    name = re.sub(r"^void ", "", name)
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"<.*", "", name)
    name = re.sub(r"\(.*", "", name)
    return name[:90]


def busy(events):
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events)
    if not spans:
        return 0.0, 0.0
    covered, end = 0.0, spans[0][0]
    for a, b in spans:
        if b <= end:
            continue
        covered += b - max(a, end)
        end = b
    window = spans[-1][1] - spans[0][0]
    return covered, window


def union(spans):
    """Sorted, disjoint intervals covering `spans`."""
    merged = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def exposed_communication(events):
    """(NCCL kernel time, the part of it during which no other kernel ran), in microseconds: the
    communication that compute did not hide."""
    def spans(comm):
        return [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                if e.get("name", "").startswith("nccl") == comm]

    comm, compute = union(spans(True)), union(spans(False))
    total = sum(b - a for a, b in comm)
    hidden, j = 0.0, 0
    for a, b in comm:
        while j < len(compute) and compute[j][1] <= a:
            j += 1
        k = j
        while k < len(compute) and compute[k][0] < b:
            hidden += min(b, compute[k][1]) - max(a, compute[k][0])
            k += 1
    return total, total - hidden


def print_table(title, labels, tables, top, divisor):
    """One markdown row per key (the largest first), one column per trace: value / divisor ms/step."""
    keys = sorted({n for t in tables for n in t}, key=lambda n: -max(t.get(n, 0.0) for t in tables))
    print()
    print(f"| {title} | " + " | ".join(f"{l} ms/step" for l in labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for n in keys[:top]:
        print(f"| {n[:90]} | " + " | ".join(f"{t.get(n, 0.0) / divisor:.2f}" for t in tables) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", help="LABEL=PATH")
    parser.add_argument("--steps", type=int, default=5, help="steps in each trace")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    labels, tables, idles, by_op, counts = [], [], [], [], []
    for item in args.traces:
        label, _, path = item.partition("=")
        everything = load(path)
        events = kernels(everything)
        idles.append(idle_causes(everything, events))
        by_op.append(time_by_operator(everything, events))
        counts.append(launches_by_operator(everything, events))
        per = defaultdict(float)
        for e in events:
            per[group(e.get("name", "?"))] += float(e["dur"]) / 1e3 / args.steps
        covered, window = busy(events)
        labels.append(label)
        tables.append(per)
        print(f"{label}: {sum(per.values()):.2f} ms of kernels per step, {len(events) / args.steps:.0f} launches "
              f"per step, GPU busy {100 * covered / window if window else 0:.1f}% of "
              f"{window / 1e3 / args.steps:.2f} ms per step")
        comm, exposed = exposed_communication(events)
        if comm > 0:
            print(f"{label}: NCCL kernels {comm / 1e3 / args.steps:.2f} ms per step, of which "
                  f"{exposed / 1e3 / args.steps:.2f} ms with no other kernel running (exposed communication)")
    print_table("kernel group", labels, tables, args.top, 1.0)
    print_table("launching operator", labels, by_op, args.top, 1e3 * args.steps)
    print()
    print("| launching operator | " + " | ".join(f"{l} launches/step" for l in labels) + " |")
    print("|---|" + "---:|" * len(labels))
    keys = sorted({n for t in counts for n in t}, key=lambda n: -max(t.get(n, 0.0) for t in counts))
    for n in keys[:args.top]:
        print(f"| {n[:90]} | " + " | ".join(f"{t.get(n, 0.0) / args.steps:.0f}" for t in counts) + " |")
    for label, causes in zip(labels, idles):
        print()
        print(f"{label}: GPU idle (gaps of 20 us or more) {sum(causes.values()) / 1e3 / args.steps:.2f} ms per step, "
              "by the operator that launched the next kernel:")
        for name, us in sorted(causes.items(), key=lambda c: -c[1])[:12]:
            print(f"  {us / 1e3 / args.steps:7.2f} ms/step  {name[:100]}")


if __name__ == "__main__":
    main()
