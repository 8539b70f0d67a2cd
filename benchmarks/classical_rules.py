"""Every classical rule of OBP, OJSP and OVRP: its cost per instance against the task's reference rule
(BestFit, SPT, SP-Insert) measured in the same run, and its mean metric on the nominal set, the
validation and the test suite, with the rule chosen on validation.

Usage: python benchmarks/classical_rules.py cost [--repeats 5]
       python benchmarks/classical_rules.py table [--tasks obp,ojsp,ovrp] [--per-dataset N]

``--per-dataset N``: the first N instances of each dataset of every suite (compare's
``--suite-instances``); the rule chosen on validation is always chosen on the whole validation suite.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks import get_task  # noqa: E402
from tasks.common.classical import classical_rules, suite_metrics, validation_means  # noqa: E402
from tasks.common.suite import Dataset  # noqa: E402
from bench_args import at_least, task_names  # noqa: E402

REFERENCE = {"obp": "BestFit", "ojsp": "SPT", "ovrp": "SP-Insert"}
SUITES = ("nominal", "validation", "test")


def cost(repeats: int) -> None:
    """Per task, seconds per nominal instance of every rule (best of ``repeats`` passes over the
    nominal set, the rules taking turns within each pass) and its ratio to the reference rule's."""
    for name, reference in REFERENCE.items():
        task = get_task(name)
        rules = classical_rules(task)
        instances = task.nominal_instances()
        best = {rule: float("inf") for rule in rules}
        for _ in range(repeats):
            for rule, priority in rules.items():
                start = time.perf_counter()
                for instance in instances:
                    task.evaluate(priority, instance)
                best[rule] = min(best[rule], (time.perf_counter() - start) / len(instances))
        print(f"\n{name}: seconds per nominal instance (best of {repeats}), against {reference}\n")
        print("| rule | ms per instance | against " + reference + " |\n|---|---:|---:|")
        for rule, seconds in best.items():
            print(f"| {rule} | {1000 * seconds:.2f} | {seconds / best[reference]:.1f}x |")


def table(names: list[str], per_dataset: int | None) -> None:
    """Per task, every rule's mean metric on each suite; the rule chosen on validation marked."""
    for name in names:
        task = get_task(name)
        rules = classical_rules(task)
        chosen = validation_means(task)
        suites = {suite: [Dataset(d.family, d.params, d.instances[:per_dataset]) for d in task.suite(suite)]
                  for suite in SUITES}
        means = {suite: {rule: float(np.mean(suite_metrics(task, priority, suites[suite])))
                         for rule, priority in rules.items()} for suite in SUITES}
        best = min(chosen, key=chosen.get)
        print(f"\n{name}: {task.metric_label}, mean per suite; best on validation: {best}\n")
        print("| rule | nominal | validation | test |\n|---|---:|---:|---:|")
        for rule in rules:
            cells = [f"{means[s][rule]:.3f}" for s in SUITES]
            label = f"**{rule}** (best on validation)" if rule == best else rule
            print(f"| {label} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("cost", "table"))
    parser.add_argument("--repeats", type=at_least(1), default=5)
    parser.add_argument("--tasks", type=task_names, default="obp,ojsp,ovrp")
    parser.add_argument("--per-dataset", type=at_least(1), default=None)
    args = parser.parse_args()
    if args.what == "cost":
        cost(args.repeats)
    else:
        table([t.strip() for t in args.tasks.split(",") if t.strip()], args.per_dataset)


if __name__ == "__main__":
    main()
