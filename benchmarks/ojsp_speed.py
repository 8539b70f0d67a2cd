"""Speed of the OJSP simulator: decisions per second and the time spent outside the heuristic.

For each paper size (M in {10, 20}, J in {20, 50}; the suite's 25 instances of that
size), each heuristic and each loop (compiled, when built, and Python), prints
decisions per second, the heuristic's own time per decision (measured inside a timing
wrapper, less the cost of the two clock reads that show up in it), the simulator's time
per decision outside the heuristic call (the plain run minus the heuristic's own time)
and the share of the run spent outside. The goal: outside < heuristic for the baselines.
Usage: python benchmarks/ojsp_speed.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from tasks.ojsp.baselines import BASELINES
from tasks.ojsp.instances import SUITE_JOBS, SUITE_MACHINES, test_suite
from tasks.ojsp import simulator
from tasks.ojsp.simulator import simulate
from bench_args import at_least


def evolved(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """The paper's evolved OJSP heuristic (its appendix listing), a realistic LLM-sized rule."""
    ops = np.asarray(candidate_operations, dtype=float)
    duration, release_time, due_date = ops[:, 1], ops[:, 2], ops[:, 3]
    remaining_work, remaining_operations = ops[:, 4], ops[:, 5]
    start_time = np.maximum(current_time, release_time)
    slack = due_date - (start_time + duration)
    urgency = np.where(slack < 0, 1.0 + (-slack) / (1.0 + duration), 1.0 / (1.0 + np.abs(slack)))
    score = (3.0 * urgency + 2.0 / (1.0 + remaining_work)
             + 1.5 * remaining_operations / (1.0 + remaining_operations)
             - 0.75 * duration / (1.0 + remaining_work))
    return np.nan_to_num(score, nan=0.0)


HEURISTICS = {**BASELINES, "evolved (paper)": evolved}


def run_all(instances, priority, compiled: bool) -> float:
    t0 = time.perf_counter()
    for inst in instances:
        simulate(inst, priority, compiled=compiled)
    return time.perf_counter() - t0


def clock_pair_cost(trials: int = 200_000) -> float:
    """What two back-to-back clock reads add to a measured interval (seconds)."""
    clock = time.perf_counter
    best = float("inf")
    for _ in range(5):
        spent = 0.0
        for _ in range(trials):
            t0 = clock()
            spent += clock() - t0
        best = min(best, spent / trials)
    return best


def measure(instances, priority, repeat: int, compiled: bool, pair: float, decisions: int):
    """Best-of-``repeat`` seconds: (plain run, inside the heuristic, outside it)."""
    clock = time.perf_counter
    plain = inside = float("inf")
    for _ in range(repeat):
        plain = min(plain, run_all(instances, priority, compiled))
        spent = [0.0]

        def timed(current_time, candidate_operations):
            t0 = clock()
            scores = priority(current_time, candidate_operations)
            spent[0] += clock() - t0
            return scores

        run_all(instances, timed, compiled)
        inside = min(inside, spent[0] - pair * decisions)
    return plain, inside, plain - inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least(1), default=7)
    args = parser.parse_args()
    suite = test_suite()
    pair = clock_pair_cost()
    loops = ([True] if simulator._fastdispatch is not None else []) + [False]
    print(f"(two clock reads add {1e9 * pair:.0f} ns to a measured interval; subtracted)")
    print(f"{'M':>3s} {'J':>3s}  {'heuristic':16s} {'loop':8s} {'decisions/s':>12s} {'heur us':>8s} "
          f"{'outside us':>10s} {'outside %':>9s}  goal met")
    for m in SUITE_MACHINES:
        for j in SUITE_JOBS:
            instances = [inst for ds in suite if ds.params == {"M": m, "J": j} for inst in ds.instances]
            decisions = sum(inst["durations"].size for inst in instances)
            for name, h in HEURISTICS.items():
                for compiled in loops:
                    plain, inside, outside = measure(instances, h, args.repeat, compiled, pair, decisions)
                    print(f"{m:3d} {j:3d}  {name:16s} {'compiled' if compiled else 'python':8s} "
                          f"{decisions / plain:12,.0f} {1e6 * inside / decisions:8.2f} "
                          f"{1e6 * outside / decisions:10.2f} {100 * outside / plain:8.1f}%  "
                          f"{'yes' if outside < inside else 'no'}")


if __name__ == "__main__":
    main()
