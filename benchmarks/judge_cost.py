"""What the judge costs, per decision and per evaluation, against the same program run in-process.

For each task, its first baseline on the nominal set: in this process with no sandbox (the
reference, measured in the same run), then through the engine on one worker, where the program runs
in a program process of its own and the worker replays its decisions, with the look-ahead check off
(``foresight=0``) and on (``foresight=1``: one instance of every job run again, in stages, in a
fresh process; runs check a quarter of their jobs, ``raise-ahd evaluate`` every one). Warm medians
over ``--repeats`` evaluations.

    python benchmarks/judge_cost.py [--repeats 15] [--tasks obp,ojsp,ovrp] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from raise_plugin.engine import Engine, ProgramSpec, SandboxLimits
from tasks import get_task
from tasks.common.decision import Recorder
from bench_args import at_least, opened, output_file, task_names


def median_seconds(call, repeats: int) -> float:
    call()  # warm: caches, the worker's instance set, the first fork
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(task_name: str, repeats: int) -> dict:
    task = get_task(task_name)
    instances = task.nominal_instances()
    baseline = next(iter(task.baselines))
    function = task.baselines[baseline]
    decisions = 0
    for instance in instances:
        recorder = Recorder(function)
        task.evaluate(recorder, instance)
        decisions += len(recorder)
    row = {"task": task_name, "program": baseline, "instances": len(instances), "decisions": decisions,
           "in_process": median_seconds(lambda: [task.evaluate(function, s) for s in instances], repeats)}
    for name, foresight in (("judge", 0.0), ("judge_checked", 1.0)):
        limits = SandboxLimits(foresight=foresight)
        with Engine(task_name, "process:1", limits=limits) as engine:
            spec = ProgramSpec(baseline=baseline)
            result = engine.evaluate(spec, instances, split=1)
            assert result.valid, result
            row[name] = median_seconds(lambda: engine.evaluate(spec, instances, split=1), repeats)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=at_least(1), default=15)
    parser.add_argument("--tasks", type=task_names, default="obp,ojsp,ovrp")
    parser.add_argument("--json", type=output_file, help="also write the figures to this file")
    args = parser.parse_args()
    rows = [measure(name, args.repeats) for name in args.tasks.split(",")]
    print(f"{'task':5} {'program':10} {'decisions':>9} {'in-process':>11} {'judge':>9} {'checked':>9} "
          f"{'us/decision':>12} {'judge/in':>9} {'checked/in':>10}")
    for r in rows:
        extra = (r["judge"] - r["in_process"]) / r["decisions"] * 1e6
        print(f"{r['task']:5} {r['program']:10} {r['decisions']:9d} {r['in_process'] * 1e3:9.1f}ms "
              f"{r['judge'] * 1e3:7.1f}ms {r['judge_checked'] * 1e3:7.1f}ms {extra:+12.2f} "
              f"{r['judge'] / r['in_process']:9.2f} {r['judge_checked'] / r['in_process']:10.2f}")
    print("judge: one evaluation of the nominal set through the engine (one job, one worker), look-ahead "
          "check off; checked: with it (the default); us/decision: the judge's time beyond in-process, "
          "per decision")
    if args.json:
        with opened(args.json) as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
