"""What recording a heuristic's decisions and replaying them costs, per task.

For OBP, OJSP and OVRP, on the nominal instances with the task's first baseline, and on
each loop (compiled, when built, and Python): the plain evaluation, the evaluation with a
``Recorder`` around the heuristic, and a ``Replay`` of the recorded decisions (no
heuristic at all), each the median of ``--repeat`` runs over the whole nominal set, the
three taken in turn within every repeat; then recorder / plain and replay / plain. The
replayed metrics are checked to equal the plain ones.
Usage: python benchmarks/replay_cost.py [--repeat 7]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from tasks import get_task
from tasks.common.decision import Recorder, Replay
from tasks.obp import simulator as obp_simulator
from tasks.ojsp import simulator as ojsp_simulator
from tasks.ovrp import simulator as ovrp_simulator
from bench_args import at_least

LOOPS = {"obp": (obp_simulator, "_fastpack"), "ojsp": (ojsp_simulator, "_fastdispatch"),
         "ovrp": (ovrp_simulator, "_fastroute")}


def timed(task, instances, make) -> tuple[float, list[float]]:
    """Seconds for one pass over ``instances``, each evaluated with ``make(i)``; the metrics."""
    priorities = [make(i) for i in range(len(instances))]  # built outside the clock
    t0 = time.perf_counter()
    metrics = [task.evaluate(priority, instance) for priority, instance in zip(priorities, instances)]
    return time.perf_counter() - t0, metrics


def measure(task, instances, heuristic, repeat: int) -> tuple[float, float, float, int]:
    """Median seconds of (plain, recorder, replay) over the instances, and the decisions made."""
    recorders = [Recorder(heuristic) for _ in instances]
    plain_metrics = [task.evaluate(heuristic, instance) for instance in instances]
    for recorder, instance, metric in zip(recorders, instances, plain_metrics):
        assert task.evaluate(recorder, instance) == metric
    recorded = [recorder.decisions for recorder in recorders]
    times = {"plain": [], "recorder": [], "replay": []}
    for _ in range(repeat):
        times["plain"].append(timed(task, instances, lambda i: heuristic)[0])
        times["recorder"].append(timed(task, instances, lambda i: Recorder(heuristic))[0])
        spent, metrics = timed(task, instances, lambda i: Replay(recorded[i]))
        assert metrics == plain_metrics, "a replay gave another metric"
        times["replay"].append(spent)
    plain, recorder, replay = (statistics.median(times[k]) for k in ("plain", "recorder", "replay"))
    return plain, recorder, replay, sum(len(d) for d in recorded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=at_least(1), default=7)
    args = parser.parse_args()
    print(f"median of {args.repeat} passes over the nominal set; times in ms for the whole set")
    print(f"{'task':5s} {'heuristic':10s} {'loop':8s} {'inst':>4s} {'decisions':>9s} {'plain':>9s} "
          f"{'recorder':>9s} {'replay':>9s} {'rec/plain':>9s} {'rep/plain':>9s}")
    for name, (module, attr) in LOOPS.items():
        task = get_task(name)
        instances = task.nominal_instances()
        label, heuristic = next(iter(task.baselines.items()))
        built = getattr(module, attr)
        for loop in (["compiled"] if built is not None else []) + ["python"]:
            setattr(module, attr, built if loop == "compiled" else None)
            try:
                plain, recorder, replay, decisions = measure(task, instances, heuristic, args.repeat)
            finally:
                setattr(module, attr, built)
            print(f"{name:5s} {label:10s} {loop:8s} {len(instances):4d} {decisions:9d} {1e3 * plain:9.2f} "
                  f"{1e3 * recorder:9.2f} {1e3 * replay:9.2f} {recorder / plain:9.3f} {replay / plain:9.3f}")


if __name__ == "__main__":
    main()
