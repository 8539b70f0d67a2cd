"""Speed of our OBP simulator against the host's ``OBPEvaluation.online_binpack``.

Both run in this process on the nominal set (5 x 5000 items, C = 200); bin counts
must be identical. Prints seconds per heuristic and the speed-up ratio host/ours, for
the compiled loop (when built) and for the pure-Python one.
Usage: python benchmarks/obp_vs_host.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from llm4ad.task.optimization.online_bin_packing.evaluation import OBPEvaluation

from tasks import get_task
from tasks.obp import simulator
from tasks.obp.simulator import bins_used, pack
from bench_args import at_least


def zeros(item, bins):
    return np.zeros_like(bins)


def best_fit(item, bins):
    return -bins


def argsort_rank(item, bins):
    ranks = np.argsort(np.argsort(bins - item))
    return -ranks.astype(float)


def percentile_gap(item, bins):
    gap = bins - item
    return -np.abs(gap - np.percentile(gap, 10)) - 0.01 * np.arange(len(bins))


def in_place_writer(item, bins):
    bins -= item  # writes into the array it is given
    return -bins


HEURISTICS = {"zeros (overhead only)": zeros, "best-fit": best_fit, "argsort-rank": argsort_rank,
              "percentile-gap": percentile_gap, "in-place writer": in_place_writer}


def host_run(host, instances, priority):
    counts = []
    for inst in instances:
        bins = np.array([inst["capacity"] for _ in range(inst["num_items"])])
        _, packed = host.online_binpack(inst["items"], bins, priority)
        counts.append(int((packed != inst["capacity"]).sum()))
    return counts


def ours_run(instances, priority, compiled):
    return [bins_used(pack(inst["items"], inst["capacity"], priority, compiled=compiled), inst["capacity"])
            for inst in instances]


def best_time(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least(1), default=3)
    args = parser.parse_args()
    instances = get_task("obp").nominal_instances()
    host = OBPEvaluation.__new__(OBPEvaluation)  # only its packing method is needed
    loops = ([True] if simulator._fastpack is not None else []) + [False]
    if simulator._fastpack is None:
        print("(the compiled loop is not built here: pure-Python loop only)")
    header = f"{'heuristic':24s} {'host s':>8s}" + "".join(
        f" {('compiled' if c else 'python') + ' s':>11s} {'ratio':>6s}" for c in loops) + "  identical"
    print(header)
    for name, h in HEURISTICS.items():
        t_host, c_host = best_time(lambda: host_run(host, instances, h), args.repeat)
        line, same = f"{name:24s} {t_host:8.3f}", True
        for compiled in loops:
            t_ours, c_ours = best_time(lambda: ours_run(instances, h, compiled), args.repeat)
            line += f" {t_ours:11.3f} {t_host / t_ours:5.2f}x"
            same = same and c_ours == c_host
        print(line + f"  {same}")


if __name__ == "__main__":
    main()
