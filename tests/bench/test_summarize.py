"""bench/gpu/summarize.py over results written the way packaging/device/run.sh writes them.

    python3 -m unittest tests/bench/test_summarize.py   (from the repository root)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "gpu", "summarize.py")

BREAKDOWN = ("rank {rank}, steps 10 to 14, medians of each part of the step (CUDA events on the compute "
             "stream): step {step} ms; forward and backward 30.00, waiting for gradient reductions after "
             "backward 0.50, gradient norm and its sum over the stages and shards 0.20, optimizer 1.20, "
             "loss reduction 0.03 ms")


def worker_log(path, tokens, breakdown_step=None, garbage=False):
    """A worker's output: `@plx` step events (steps 0..len-1), one breakdown line per rank."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("[1,0]<stdout>: starting\n")
        for step, value in enumerate(tokens):
            event = {"ev": "step", "v": 1, "step": step, "tokens_per_s": value, "step_ms": 32768000 / value,
                     "mfu": 0.4, "peak_mem": 11 * 2**30}
            f.write("[1,0]<stdout>:@plx " + json.dumps(event) + "\n")
            if garbage and step == 3:
                f.write("@plx {\"ev\": \"step\", \"step\": 4, \"tokens_per_s\": \n")  # cut off mid-line
        if breakdown_step is not None:
            for rank in (1, 0):
                f.write("@plx " + json.dumps({"ev": "log", "message": BREAKDOWN.format(rank=rank, step=breakdown_step)})
                        + "\n")


def manifest_line(kind, name, gpus, rc, log, command):
    return json.dumps({"kind": kind, "name": name, "gpus": gpus, "rc": rc, "seconds": 9, "log": log,
                       "command": " ".join(command)}) + "\n"


class SummarizeTest(unittest.TestCase):
    def summarize(self, results):
        done = subprocess.run([sys.executable, SCRIPT, results], capture_output=True, text=True, check=True)
        return done.stdout

    def rows(self, text, model, impl):
        return [line for line in text.splitlines() if line.startswith(f"| {model} |") and f"| {impl} |" in line]

    def test_every_run_of_an_item_has_its_row_and_the_ratio_is_within_the_call(self):
        with tempfile.TemporaryDirectory() as results:
            # dp=2 given twice in one call: run.sh keeps the second log as parallax-NAME-run2.log.
            # Warm-up steps (0-9) are far off and must not count.
            worker_log(os.path.join(results, "parallax-gpt-124m-dp2.log"),
                       [1000.0] * 10 + [900000.0, 910000.0, 920000.0, 930000.0, 940000.0], breakdown_step="35.26")
            worker_log(os.path.join(results, "parallax-gpt-124m-dp2-run2.log"),
                       [1000.0] * 10 + [800000.0] * 5, breakdown_step="41.00", garbage=True)
            with open(os.path.join(results, "manifest.jsonl"), "w", encoding="utf-8") as f:
                f.write(manifest_line("parallax", "gpt-124m-dp2", 2, 0, "results/parallax-gpt-124m-dp2.log",
                                      ["mpirun", "-np", "2", "parallax-worker"]))
                f.write(manifest_line("parallax", "gpt-124m-dp2", 2, 0, "results/parallax-gpt-124m-dp2-run2.log",
                                      ["mpirun", "-np", "2", "parallax-worker"]))
                f.write(manifest_line("parallax", "gpt-1.3b-zero3-dp2", 2, 137, "results/parallax-gpt-1.3b-zero3-dp2.log",
                                      ["mpirun", "-np", "2", "parallax-worker"]))
                f.write(manifest_line("reference", "124m:ddp-compile", 2, 0, "logs/reference-124m-ddp-compile-2.log",
                                      ["mpirun", "-np", "2", "python3", "bench/gpu/reference.py"]))
            with open(os.path.join(results, "reference.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps({"impl": "pytorch", "model": "gpt-124m", "mode": "ddp-compile", "gpus": 2,
                                    "micro_batch": 16, "global_batch": 32, "seq": 1024, "tokens_per_s": 800000.0,
                                    "step_ms": 40.96, "mfu": 0.35, "peak_mem_gib": 9.5, "device": "NVIDIA H200",
                                    "torch": "2.11.0+cu130"}) + "\n")
            text = self.summarize(results)

        parallax = self.rows(text, "gpt-124m", "Parallax")
        self.assertEqual(len(parallax), 2, text)
        self.assertTrue(any("| 920,000 |" in r and "| 1.15x DDP + torch.compile |" in r for r in parallax), parallax)
        self.assertTrue(any("| 800,000 |" in r and "| 1.00x DDP + torch.compile |" in r for r in parallax), parallax)
        self.assertTrue(all("| dp=2 |" in r and "| 11.0 |" in r and "| 40.0% |" in r for r in parallax), parallax)
        reference = self.rows(text, "gpt-124m", "PyTorch DDP + torch.compile")
        self.assertEqual(len(reference), 1, text)
        self.assertIn("| 800,000 | 41.0 | 35.0% | 9.5 | — |", reference[0])
        # The failed run is a row that says so, not a number.
        failed = self.rows(text, "gpt-1.3b", "Parallax")
        self.assertEqual(len(failed), 1, text)
        self.assertIn("failed (exit 137)", failed[0])
        # Both runs' breakdowns, each rank in order.
        split = [line for line in text.splitlines() if line.startswith("| gpt-124m | dp=2 | ")
                 and line.split("|")[3].strip() in ("0", "1")]
        self.assertEqual([line.split("|")[3].strip() for line in split], ["0", "1", "0", "1"], text)
        self.assertEqual(sorted(line.split("|")[4].strip() for line in split), ["35.26", "35.26", "41.00", "41.00"])
        self.assertIn("Hardware and software: NVIDIA H200; PyTorch 2.11.0+cu130.", text)

    def test_a_run_without_step_telemetry_says_so(self):
        with tempfile.TemporaryDirectory() as results:
            with open(os.path.join(results, "parallax-gpt-124m-1gpu.log"), "w", encoding="utf-8") as f:
                f.write("terminate called after throwing an instance of 'c10::Error'\n")
            with open(os.path.join(results, "manifest.jsonl"), "w", encoding="utf-8") as f:
                f.write(manifest_line("parallax", "gpt-124m-1gpu", 1, 0, "results/parallax-gpt-124m-1gpu.log",
                                      ["mpirun", "-np", "1", "parallax-worker"]))
                f.write("not json\n")
            text = self.summarize(results)
        rows = self.rows(text, "gpt-124m", "Parallax")
        self.assertEqual(len(rows), 1, text)
        self.assertIn("| 1 GPU | Parallax | 1 | 16 | no step telemetry |", rows[0])


if __name__ == "__main__":
    unittest.main()
