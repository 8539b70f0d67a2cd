"""Robust-run settings measured on the validation suite (never the test suite).

Trains one run per (setting, seed) with ``raise-ahd run`` (runs in parallel, resumed or
skipped when already there), then evaluates each run's final program on the task's
validation suite beside the classical baselines, and writes ``validation.csv`` and
``validation.md``: per setting the mean validation metric over seeds with its 95 %
interval, and the paired statistics (Wilcoxon over (seed, instance), seed bootstrap of the
mean difference) against the reference setting and the best baseline. Two selections of
the final program are reported: the run's robust best (what a run returns) and the
member of its final population with the best validation metric (a selection made on the
validation suite, which the test suite never sees).

    python benchmarks/robust_settings.py --task obp --grid objective --budget 300 --seeds 0,1,2 --out grid-obp

Grids: ``objective`` ({metric, regret:baselines, regret:population} x {mean, balanced} and
the plain run), ``diagnosis`` (eps x projection, window, aggregation, tau, length gene, three draws
with one or all of them added per refresh: each
the paper's setting with one thing changed), or settings given as ``--setting NAME='--flag
value ...'``. A run directory that exists is resumed with the settings it recorded.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raise_plugin.harness.stats import compare_paired, mean_half_width  # noqa: E402
from raise_plugin.validation import final_candidates  # noqa: E402
from tasks import get_task  # noqa: E402
from bench_args import at_least, each_at_least, task_name  # noqa: E402

REFERENCE = "metric+mean"
# Every robust setting spells out the paper's ball, objective and score and changes only what
# it names, so a grid measures the same settings whatever the task's own defaults become.
PAPER = "--epsilon 0.002 --projection paper --adversary-objective metric --aggregation mean"

GRIDS = {
    "objective": {
        "plain": "--no-robust",
        "metric+mean": PAPER,
        "metric+balanced": f"{PAPER} --aggregation balanced",
        "regret:baselines+mean": f"{PAPER} --adversary-objective regret:baselines",
        "regret:baselines+balanced": f"{PAPER} --adversary-objective regret:baselines --aggregation balanced",
        "regret:population+mean": f"{PAPER} --adversary-objective regret:population",
        "regret:population+balanced": f"{PAPER} --adversary-objective regret:population --aggregation balanced",
    },
    "diagnosis": {
        "metric+mean": PAPER,
        "eps0.005": f"{PAPER} --epsilon 0.005",
        "eps0.01": f"{PAPER} --epsilon 0.01",
        "eps0.02": f"{PAPER} --epsilon 0.02",
        "sphere-eps0.002": f"{PAPER} --projection sphere",
        "sphere-eps0.005": f"{PAPER} --projection sphere --epsilon 0.005",
        "sphere-eps0.01": f"{PAPER} --projection sphere --epsilon 0.01",
        "sphere-eps0.02": f"{PAPER} --projection sphere --epsilon 0.02",
        "keep-all": f"{PAPER} --max-adversarial 1000",
        "min": f"{PAPER} --aggregation min",
        "cvar0.3": f"{PAPER} --aggregation cvar:0.3",
        "tau1": f"{PAPER} --tau 1",
        "fixed-length": f"{PAPER} --length nominal",
        "draws3": f"{PAPER} --inner-draws 3",
        "draws3-all": f"{PAPER} --inner-draws 3 --instances-per-refresh draws --max-adversarial 30",
    },
}


def run_one(name: str, flags: str, seed: int, args, out: Path) -> tuple[str, int]:
    """The run of setting ``name`` at ``seed`` (resumed, or passed over when it finished before): its line, and
    its exit status."""
    run_dir = out / "runs" / f"{name}-seed{seed}"
    summary = run_dir / "summary.json"
    if summary.exists() and json.loads(summary.read_text()).get("finished"):
        return f"{name} seed {seed}: finished before", 0
    exe = str(Path(sys.executable).with_name("raise-ahd"))
    if (run_dir / "config.json").exists():
        cmd = [exe, "resume", str(run_dir), "--no-progress"]
    else:
        cmd = [exe, "run", "--task", args.task, "--method", args.method, "--budget", str(args.budget),
               "--pop-size", str(args.pop_size), "--seed", str(seed), "--out", str(run_dir), "--no-progress",
               *shlex.split(args.common), *shlex.split(flags)]
    started = time.time()
    with open(out / "logs" / f"{name}-seed{seed}.log", "a") as log:
        code = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
    return f"{name} seed {seed}: exit {code} in {time.time() - started:.0f} s", code


def evaluate(args, out: Path, settings: dict[str, str]) -> None:
    task = get_task(args.task)
    suite = task.validation_suite(per_dataset=args.per_dataset)
    rows: list[dict] = []
    cache_file = out / "validation_cache.json"
    cache = json.loads(cache_file.read_text()) if cache_file.exists() else {}

    def per_instance(codes: dict[str, str], baselines=()) -> dict[str, list]:
        from raise_plugin.engine.suite import Heuristic, evaluate_suite
        todo = {k: v for k, v in codes.items() if k not in cache}
        hs = [Heuristic(k, code=v) for k, v in todo.items()] + [Heuristic(b, baseline=b) for b in baselines
                                                                 if b not in cache]
        if hs:
            for r in evaluate_suite(task.name, hs, suite, workers=args.jobs, progress=False):
                cache.setdefault(r.heuristic, []).append(
                    {"dataset": r.dataset, "family": r.family, "instance": r.instance,
                     "metric": r.metric if r.valid else None})
            cache_file.write_text(json.dumps(cache))
        return {k: cache[k] for k in list(codes) + list(baselines)}

    base = per_instance({}, list(task.baselines))
    for b, results in base.items():
        rows += [{"method": b, "seed": 0, **r, "valid": r["metric"] is not None} for r in results]
    summary_rows = []
    for name in settings:
        for seed in args.seeds:
            run_dir = out / "runs" / f"{name}-seed{seed}"
            summary_file = run_dir / "summary.json"
            if not summary_file.exists() or not json.loads(summary_file.read_text()).get("finished"):
                if summary_file.exists():
                    print(f"left out: {name} seed {seed} has not finished (resume it with the same command)")
                continue
            final = final_candidates(run_dir)
            results = per_instance(final["codes"])
            means = {pid: np.mean([r["metric"] if r["metric"] is not None else np.inf for r in res])
                     for pid, res in results.items()}
            picked = {"robust best": final["best"], "validation-selected": min(means, key=means.get)}
            for selection, pid in picked.items():
                label = name if selection == "robust best" else f"{name} [val-selected]"
                rows += [{"method": label, "seed": seed, **r, "valid": r["metric"] is not None}
                         for r in results[pid]]
            s = final["summary"]
            summary_rows.append({"setting": name, "seed": seed, "program_id": final["best"],
                                 "robust_score": s["best"]["robust_score"], "refreshes": s["refreshes"],
                                 "samples": s["samples"], "seconds": s.get("seconds")})
    with open(out / "validation.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["method", "seed", "dataset", "family", "instance", "metric", "valid"])
        w.writeheader()
        w.writerows(rows)
    write_table(args, out, rows, settings, base)


def write_table(args, out: Path, rows: list[dict], settings: dict[str, str], base: dict) -> None:
    best_baseline = min(base, key=lambda b: np.mean([r["metric"] for r in base[b]]))
    lines = [f"# {args.task}: robust settings on the validation suite", "",
             f"{args.method}, budget {args.budget}, population {args.pop_size}, seeds "
             f"{', '.join(map(str, args.seeds))}; common flags `{args.common}`; validation suite "
             f"{args.per_dataset} instance(s) per dataset. Metric: mean over the validation instances, lower is "
             "better; ± is the 95 % t-interval over seeds. Δ: paired difference (setting − reference) over "
             "(seed, instance) with its 95 % seed-bootstrap interval and the Wilcoxon p-value.", "",
             "| setting | selection | validation metric | Δ vs " + REFERENCE + " | p | Δ vs " + best_baseline +
             " | p |", "|---|---|---:|---:|---:|---:|---:|"]
    for b in base:
        lines.append(f"| {b} | baseline | {np.mean([r['metric'] for r in base[b]]):.3f} | | | | |")
    for name in settings:
        for label, selection in ((name, "robust best"), (f"{name} [val-selected]", "validation-selected")):
            mine = [r for r in rows if r["method"] == label]
            if not mine:
                continue
            per_seed = [np.mean([r["metric"] if r["valid"] else np.inf for r in mine if r["seed"] == s])
                        for s in sorted({r["seed"] for r in mine})]
            hw = mean_half_width(per_seed)
            cell = f"{np.mean(per_seed):.3f}" + (f" ± {hw:.3f}" if math.isfinite(hw) else "")
            ref_label = REFERENCE if selection == "robust best" else f"{REFERENCE} [val-selected]"
            vs_ref = ("", "")
            if label != ref_label and any(r["method"] == ref_label for r in rows):
                c = compare_paired(rows, label, ref_label, by_seed=True)
                vs_ref = (f"{c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}]{' *' if c.significant else ''}", f"{c.p:.3g}")
            c = compare_paired(rows, label, best_baseline)
            vs_base = (f"{c.mean:+.3f} [{c.low:+.3f}, {c.high:+.3f}]{' *' if c.significant else ''}", f"{c.p:.3g}")
            lines.append(f"| {name} | {selection} | {cell} | {vs_ref[0]} | {vs_ref[1]} | {vs_base[0]} | {vs_base[1]} |")
    lines += ["", "`*`: significant at 0.05 (the Wilcoxon test rejects and the interval excludes 0)."]
    (out / "validation.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", type=task_name, default="obp")
    p.add_argument("--method", default="eoh")
    p.add_argument("--grid", choices=sorted(GRIDS), default="objective")
    p.add_argument("--only", help="comma-separated setting names of the grid to run")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=FLAGS")
    p.add_argument("--budget", type=at_least(1), default=300)
    p.add_argument("--pop-size", type=at_least(2), default=10)
    p.add_argument("--seeds", type=each_at_least(0), default=[0, 1, 2])
    p.add_argument("--common", default="", help="flags given to every run, e.g. '--epsilon 0.002'")
    p.add_argument("--jobs", type=at_least(1), default=2, help="runs at once (each uses one core)")
    p.add_argument("--per-dataset", type=at_least(1), default=2, help="validation instances per dataset")
    p.add_argument("--evaluate-only", action="store_true")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    settings = dict(GRIDS[args.grid])
    if args.only:
        unknown = [k for k in args.only.split(",") if k not in settings]
        if unknown:
            p.error(f"--only: {unknown[0]!r} is not a setting of the {args.grid} grid; choose from "
                    f"{', '.join(settings)}")
        settings = {k: settings[k] for k in args.only.split(",")}
    for item in args.setting:
        name, _, flags = item.partition("=")
        settings[name] = flags
    out = Path(args.out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / "settings.json").write_text(json.dumps({"settings": settings, **{k: v for k, v in vars(args).items()
                                                                           if k != "setting"}}, indent=1))
    failed = 0
    if not args.evaluate_only:
        jobs = [(name, flags, seed) for seed in args.seeds for name, flags in settings.items()]
        with cf.ThreadPoolExecutor(args.jobs) as pool:
            for done in cf.as_completed([pool.submit(run_one, n, f, s, args, out) for n, f, s in jobs]):
                line, code = done.result()
                failed += code != 0
                print(line, flush=True)
    evaluate(args, out, settings)
    if failed:  # the table holds the runs that finished; the rest say why in their logs
        print(f"robust_settings.py: {failed} of {len(jobs)} runs failed: their logs are in {out / 'logs'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
