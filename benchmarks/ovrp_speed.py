"""Speed of the OVRP simulator: decisions per second and the time spent outside the heuristic.

For every fleet size V in {5, 10, 15} it routes the suite's 25 instances of that
size with each heuristic, timing every heuristic call, once with the compiled loop
(``tasks/ovrp/_fastroute.c``) and once with the pure-numpy one. ``outside`` is the
simulator's own time per decision (candidate construction, score check,
insertion, and the per-instance set-up spread over its decisions), with the
timing wrapper's own cost measured and subtracted; the goal is
``outside < inside`` (the heuristic call itself), i.e. a ratio outside / inside
below 1. Besides the baselines it times plain cheapest insertion and the evolved
heuristic printed in the paper. The machine's load moves absolute times; the
ratio is the steadier figure.
Usage: python benchmarks/ovrp_speed.py [--repeat 5] [--baselines-only]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from tasks import get_task
from tasks.ovrp.baselines import cheapest_insertion
from tasks.ovrp import simulator
from tasks.ovrp.simulator import simulate
from bench_args import at_least


def paper_listing(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """The evolved OVRP heuristic printed in the paper's appendix (its listing, unchanged in substance)."""
    if candidate_insertions is None or candidate_insertions.size == 0:
        return np.array([], dtype=float)
    cand = np.asarray(candidate_insertions, dtype=float)
    delta_distance = cand[:, 2]
    residual_capacity = cand[:, 3]
    current_load = cand[:, 4]
    route_size = cand[:, 5]
    customer_dist = cand[:, 6]
    projected_route = cand[:, 7]
    demand = float(customer_features[2])
    progress = float(np.clip(customer_features[4], 0.0, 1.0))
    w_travel = 0.3 + 1.0 * progress
    w_projected = 0.1 + 0.6 * progress
    w_prox = 0.5
    w_capacity = 0.2 + 1.0 * (1.0 - progress)
    w_balance = 0.1 + 0.8 * (1.0 - progress)
    w_size = 0.4
    balance_score = 1.0 - 2.0 * np.abs(current_load - 0.5)
    demand_scale = 1.0 + 0.5 * max(0.0, demand)
    score = (w_travel * (-delta_distance) + w_projected * (-projected_route) + w_prox * (-customer_dist)
             + w_capacity * residual_capacity * demand_scale + w_balance * balance_score - w_size * route_size)
    return np.asarray(score, dtype=float)


class Timed:
    """Wraps a priority function and accumulates the wall time of its calls."""

    def __init__(self, fn):
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, features, candidates):
        t0 = time.perf_counter()
        out = self.fn(features, candidates)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return out


def wrapper_cost(calls: int = 20000) -> float:
    """Seconds per call that ``Timed`` itself adds outside the timed region (subtracted below)."""
    def noop(features, candidates):
        return None
    timed = Timed(noop)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            noop(None, None)
        plain = time.perf_counter() - t0
        timed.seconds = 0.0
        t0 = time.perf_counter()
        for _ in range(calls):
            timed(None, None)
        best = min(best, (time.perf_counter() - t0 - plain - timed.seconds) / calls)
    return max(best, 0.0)


def measure(instances, priority, repeat: int, compiled: bool):
    """Best-of-``repeat`` (total seconds, heuristic seconds, decisions)."""
    best = None
    for _ in range(repeat):
        timed = Timed(priority)
        t0 = time.perf_counter()
        for inst in instances:
            simulate(inst, timed, compiled=compiled)
        total = time.perf_counter() - t0
        if best is None or total < best[0]:
            best = (total, timed.seconds, timed.calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least(1), default=5)
    parser.add_argument("--baselines-only", action="store_true", help="only the three baselines")
    args = parser.parse_args()
    task = get_task("ovrp")
    by_fleet: dict[int, list] = {}
    for dataset in task.test_suite():
        by_fleet.setdefault(dataset.params["V"], []).extend(dataset.instances)
    overhead = wrapper_cost()
    heuristics = dict(task.baselines)
    if not args.baselines_only:
        heuristics.update({"Cheapest": cheapest_insertion, "paper listing": paper_listing})
    loops = [("compiled", True), ("python", False)] if simulator._fastroute is not None else [("python", False)]
    if simulator._fastroute is None:
        print("(the compiled loop is not built here: Python loop only)")
    print(f"{'heuristic':14s} {'loop':8s} {'V':>3s} {'decisions/s':>12s} {'inside us':>10s} {'outside us':>11s} "
          f"{'outside/inside':>15s}  outside < inside")
    for name, h in heuristics.items():
        for loop, flag in loops:
            for v, instances in sorted(by_fleet.items()):
                total, inside, calls = measure(instances, h, args.repeat, flag)
                outside = total - inside - overhead * calls
                print(f"{name:14s} {loop:8s} {v:3d} {calls / total:12.0f} {1e6 * inside / calls:10.2f} "
                      f"{1e6 * outside / calls:11.2f} {outside / inside:15.2f}  {outside < inside}")


if __name__ == "__main__":
    main()
