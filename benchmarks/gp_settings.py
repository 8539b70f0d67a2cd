"""GP's settings chosen on the validation suite (never the test suite).

Trains plain GP under a few settings of its own (tournament size, crossover rate, tree size)
at one budget and several seeds on a task's nominal set, scores each run's best program on the
task's validation suite, and prints, per setting, the validation metric's mean and the 95 %
Student-t half-width over seeds, with the setting the validation suite chooses.

With ``--test``, the setting the validation suite chose (and the defaults, beside it) is then
scored once on the test suite (one instance per dataset), the report the choice is for.

Usage: python benchmarks/gp_settings.py [--task ojsp] [--budget 200] [--seeds 5] [--per-dataset 1] [--test]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

import raise_plugin as rp
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.harness.stats import mean_half_width
from raise_plugin.methods import get_method
from raise_plugin.validation import validation_metrics
from tasks.common.suite import Dataset
from bench_args import at_least, task_name

# GP's defaults first, then one change at a time
SETTINGS = {
    "defaults (tournament 3, crossover 0.5, size 40, height 7)": {},
    "tournament 5": {"tournament_size": 5},
    "crossover 0.8": {"crossover_rate": 0.8},
    "small trees (size 20, height 5)": {"max_size": 20, "max_height": 5},
}


def train(task_name: str, budget: int, seed: int, options: dict) -> str:
    """The best program of one plain GP run on the task's nominal set."""
    task = rp.get_task(task_name)
    method = rp.robust(get_method("gp"))(llm=rp.make_llm("offline", task=task_name), evaluation=task.evaluation(),
                                         max_sample_nums=budget, pop_size=10, max_generations=None, seed=seed,
                                         progress=False, **options)
    return method.run()["best"]["program"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=task_name, default="ojsp")
    parser.add_argument("--budget", type=at_least(1), default=200)
    parser.add_argument("--seeds", type=at_least(1), default=5)
    parser.add_argument("--per-dataset", type=at_least(1), default=1)
    parser.add_argument("--test", action="store_true", help="then score the chosen setting on the test suite")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    task = rp.get_task(args.task)
    rows, programs = {}, {}
    for name, options in SETTINGS.items():
        start = time.monotonic()
        codes = {f"seed{s}": train(args.task, args.budget, s, options) for s in range(args.seeds)}
        programs[name] = codes
        found = validation_metrics(task, codes, per_dataset=args.per_dataset)
        values = np.array([found[k]["metric"] for k in codes])
        rows[name] = (float(values.mean()), mean_half_width(values), values.tolist(), time.monotonic() - start)
        print(f"{name}: {rows[name][0]:.4f} ± {rows[name][1]:.4f} over seeds {list(range(args.seeds))} "
              f"({rows[name][3]:.0f} s)", flush=True)
    baseline = validation_metrics(task, {}, per_dataset=args.per_dataset, baselines=list(task.baselines))
    best_rule = min(baseline, key=lambda b: baseline[b]["metric"])
    print(f"\n{args.task}, plain GP, budget {args.budget}, validation suite ({args.per_dataset} instance per "
          f"dataset), lower is better; best rule {best_rule} {baseline[best_rule]['metric']:.4f}\n")
    print("| GP setting | validation (mean ± h) | per seed |\n|---|---:|---|")
    for name, (mean, half, values, _) in rows.items():
        print(f"| {name} | {mean:.4f} ± {half:.4f} | {', '.join(f'{v:.4f}' for v in values)} |")
    chosen = min(rows, key=lambda n: rows[n][0])
    print(f"\nchosen on validation: {chosen}")
    print(json.dumps({n: r[:3] for n, r in rows.items()}))
    if args.test:
        test_report(task, programs, chosen, next(iter(SETTINGS)))


def test_report(task, programs: dict, chosen: str, defaults: str) -> None:
    """The chosen setting's programs (and the defaults') on the test suite, beside the rules."""
    datasets = [Dataset(d.family, d.params, d.instances[:1]) for d in task.test_suite()]
    names = list(dict.fromkeys([chosen, defaults]))
    heuristics = [Heuristic(f"{i}:{seed}", code=code) for i, name in enumerate(names)
                  for seed, code in programs[name].items()]
    heuristics += [Heuristic(b, baseline=b) for b in task.baselines]
    rows = evaluate_suite(task.name, heuristics, datasets, progress=False)
    by = {}
    for r in rows:
        by.setdefault(r.heuristic, []).append(r.metric if r.valid else np.nan)
    rules = {b: float(np.nanmean(by[b])) for b in task.baselines}
    best = min(rules, key=rules.get)
    print(f"\ntest suite (1 instance per dataset): best rule {best} {rules[best]:.4f}")
    for i, name in enumerate(names):
        per_seed = np.array([np.nanmean(by[f"{i}:{seed}"]) for seed in programs[name]])
        print(f"| {name} | {per_seed.mean():.4f} ± {mean_half_width(per_seed):.4f} | "
              f"{', '.join(f'{v:.4f}' for v in per_seed)} |")


if __name__ == "__main__":
    main()
