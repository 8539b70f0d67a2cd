"""Samples per second of one robust run with its evaluations on one core and on every core.

The same run (task, seed, budget; offline sampler) twice, in fresh processes, first with
``--executor process:1`` and then with the default (one sandboxed worker per core). Prints
each run's samples per second and where a sample's time goes (the run's own breakdown,
``time_per_sample`` in summary.json), the ratio, and whether both runs recorded the same
programs and scores (they must: the number of workers changes only the speed).

    python benchmarks/run_cores.py --task obp --budget 300      # a 300-sample slice of the paper's run

Run it on an otherwise idle machine: other work on the cores is measured too.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_args import at_least, run_or_exit, task_name


def _run(task: str, budget: int, pop_size: int, executor: str | None, out: Path) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "raise_plugin.cli", "run", "--task", task, "--budget", str(budget),
           "--pop-size", str(pop_size), "--seed", "0", "--out", str(out), "--no-progress", "--no-host-profiler",
           "--no-validation-trace"]
    if executor:
        cmd += ["--executor", executor]
    start = time.perf_counter()
    run_or_exit(cmd, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    return seconds, json.loads((out / "summary.json").read_text())


def _samples(out: Path) -> list:
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    return [(r["program_id"], r["score"]) for r in rows]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", type=task_name, default="obp")
    p.add_argument("--budget", type=at_least(1), default=300)
    p.add_argument("--pop-size", type=at_least(2), default=10)
    args = p.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for label, executor in (("1 core", "process:1"), (f"all {cores} cores", None)):
            out = Path(tmp) / label.replace(" ", "-")
            seconds, summary = _run(args.task, args.budget, args.pop_size, executor, out)
            results[label] = (seconds, summary, _samples(out))
            t = summary.get("time_per_sample") or {}
            print(f"{label:12s} {summary['samples']} samples in {seconds:.0f} s: "
                  f"{summary['samples'] / seconds:.3f} samples/s; per sample {t.get('wall', 0):.3g} s = llm "
                  f"{t.get('llm', 0):.3g} + evaluation {t.get('evaluation', 0):.3g} + inner search "
                  f"{t.get('inner_search', 0):.3g} + re-scoring {t.get('rescore', 0):.3g} + other {t.get('other', 0):.3g}",
                  flush=True)
        (one, _, a), (many, _, b) = results.values()
        print(f"speed-up with every core: {one / many:.2f}x; same programs and scores: {a == b}")


if __name__ == "__main__":
    main()
