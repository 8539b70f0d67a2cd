"""Finished runs trained after a default was fixed, on the test suite beside the classical rules.

``--suite validation`` (with ``--per-dataset N`` instances of each validation dataset) reports
the same on the validation suite instead: the figures a default is chosen on, before the test
suite is read.

A check that had no part in choosing the default: each run hands on its final program as its
task says (``Task.final_selection``; ``--select-on`` to override), which is evaluated on the
task's test suite with the baselines; the report gives each run's mean, the mean over runs
with its 95 % t-interval, and the harness's paired statistics (Wilcoxon over (run, instance),
seed-bootstrap interval of the mean difference) against the best baseline, per run and
pooled. Nothing is selected on the test suite.

``--plain RUN...`` adds the runs' plain twins (same seeds, no adversary): each hands on its
final program the same way, and the report adds their mean and the paired comparison of the
runs against them over (seed, instance).

    python benchmarks/heldout_runs.py obp1000-fresh/seed3 obp1000-fresh/seed4 --out fresh.csv
    python benchmarks/heldout_runs.py obp1000-fresh/seed3 --suite validation --per-dataset 10
    python benchmarks/heldout_runs.py robust/seed0 robust/seed1 --plain plain/seed0 plain/seed1
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raise_plugin.resolve import final_selection  # noqa: E402
from raise_plugin.harness.final_programs import final_program  # noqa: E402
from raise_plugin.errors import UserError  # noqa: E402
from raise_plugin.harness.stats import compare_paired, mean_half_width  # noqa: E402
from raise_plugin.rundir.reader import finished_summary  # noqa: E402
from raise_plugin.engine.suite import Heuristic, evaluate_suite  # noqa: E402
from tasks import get_task  # noqa: E402
from bench_args import opened, output_file  # noqa: E402

METHOD = "run"
PLAIN = "plain"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="finished run directories of one task")
    p.add_argument("--select-on", choices=("robust", "validation"), help="default: the task's")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--out", type=output_file, help="write every (heuristic, instance) result to this CSV file")
    p.add_argument("--suite", choices=("test", "validation"), default="test")
    p.add_argument("--plain", nargs="+", default=[], metavar="RUN",
                   help="the runs' plain twins (one per seed), compared with them paired by seed")
    p.add_argument("--per-dataset", type=int, default=None,
                   help="instances of each validation dataset (default: the task's); --suite validation only")
    args = p.parse_args(argv)
    if args.per_dataset is not None and (args.suite != "validation" or args.per_dataset < 1):
        p.error("--per-dataset takes a whole number >= 1, with --suite validation")
    for run in (*args.runs, *args.plain):
        if not (Path(run) / "config.json").is_file():
            p.error(f"{run} is not a run directory (no config.json)")
        try:
            finished_summary(Path(run))  # a run killed or stopped has no final program yet
        except UserError as exc:
            p.error(str(exc))
    configs = {Path(r): json.loads((Path(r) / "config.json").read_text()) for r in args.runs}
    plain = {Path(r): json.loads((Path(r) / "config.json").read_text()) for r in args.plain}
    tasks = {c["task"] for c in (configs | plain).values()}
    if len(tasks) != 1:
        p.error(f"the runs are of {len(tasks)} tasks; give runs of one")
    task = get_task(tasks.pop())
    select_on = args.select_on or final_selection(task.name)
    if sorted(c["seed"] for c in plain.values()) != sorted(set(c["seed"] for c in plain.values())):
        p.error("--plain: give one plain run per seed")
    heuristics, seeds, twins = [], {}, {}
    for group, runs in ((seeds, configs), (twins, plain)):
        for run, config in runs.items():
            code = final_program(run, task, select_on, args.workers)
            if code is None:
                p.error(f"{run}: no valid program")
            name = run.name if run.name not in seeds and run.name not in twins else str(run)
            heuristics.append(Heuristic(name, code=code))
            group[name] = config["seed"]
    heuristics += [Heuristic(b, baseline=b) for b in task.baselines]
    suite = task.test_suite() if args.suite == "test" else task.validation_suite(per_dataset=args.per_dataset)
    rows = evaluate_suite(task.name, heuristics, suite, workers=args.workers)
    table = [{"method": METHOD if r.heuristic in seeds else PLAIN if r.heuristic in twins else r.heuristic,
              "seed": seeds.get(r.heuristic, twins.get(r.heuristic, 0)),
              "run": r.heuristic, "dataset": r.dataset, "family": r.family, "params": r.params,
              "instance": r.instance, "metric": r.metric, "valid": r.valid} for r in rows]
    if args.out:
        with opened(args.out, newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)

    def mean_of(name):
        return float(np.mean([r["metric"] for r in table if r["run"] == name and r["valid"]]))

    best = min(task.baselines, key=mean_of)
    size = len({(r["dataset"], r["instance"]) for r in table})
    print(f"{task.name}: {args.suite} suite ({size} instances), final program {select_on!r}; lower is better")
    for b in task.baselines:
        print(f"  {b:24s} {mean_of(b):.3f}")
    per_run = []
    for name in seeds:
        per_run.append(mean_of(name))
        c = compare_paired([r for r in table if r["run"] in (name, best)], METHOD, best)
        print(f"  {name:24s} {per_run[-1]:.3f}   vs {best}: {c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}] "
              f"(over {c.over}), Wilcoxon p {c.p:.2g}")
    c = compare_paired(table, METHOD, best)
    print(f"  {'over the runs':24s} {np.mean(per_run):.3f} ± {mean_half_width(per_run):.3f}   vs {best}: "
          f"{c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}], Wilcoxon p {c.p:.2g}, {c.pairs} pairs over {c.over}; "
          f"{c.verdict}")
    if twins:
        per_twin = [mean_of(name) for name in twins]
        for name, value in zip(twins, per_twin):
            print(f"  {name:24s} {value:.3f}   (plain, seed {twins[name]})")
        c = compare_paired(table, METHOD, PLAIN, by_seed=True)
        print(f"  {'plain twins':24s} {np.mean(per_twin):.3f} ± {mean_half_width(per_twin):.3f}   runs vs plain: "
              f"{c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}], Wilcoxon p {c.p:.2g}, {c.pairs} pairs over {c.over}; "
              f"{c.verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
