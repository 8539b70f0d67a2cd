"""``raise-ahd rerank``: re-rank an existing llm4ad or plugin run's programs by robust score."""
from __future__ import annotations

import csv
import math
from pathlib import Path

from raise_plugin.commands.evaluate import all_invalid_status, check_output, report_invalid, resolve_task
from raise_plugin.errors import UserError
from raise_plugin.harness.rerank import (check_recorded_task, load_run_programs, recorded_run_config, rerank,
                                        robust_settings, run_nominal_seed)
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.harness.tables import render_table
from raise_plugin.programs import ProgramError
from raise_plugin.rundir.reader import finished_summary, load_config
from raise_plugin.commands.flags import SEARCH_TIMEOUT_HELP, add_flags, check_flags, in_flag_words
from tasks.common.suite import Dataset


def register(sub) -> None:
    p = sub.add_parser("rerank", help="re-rank a finished run's programs by robust score")
    p.add_argument("log_dir", metavar="LOG_DIR", help="an llm4ad log folder or a plugin run directory")
    add_flags(p, ("task", "epsilon", "refreshes", "top", "aggregation", "seed", "inner_population",
                  "inner_generations", "suite_instances", "workers", "timeout", "out", "progress"),
              defaults={"task": None},
              shown={"out": "none: the tables are printed, nothing written",
                     "task": "the one a plugin run directory recorded; an llm4ad log folder records none"},
              helps={"out": "write rerank.csv, rerank.md and the robust bests here",
                     "suite_instances": "at most N instances per test dataset when comparing the two bests",
                     "timeout": SEARCH_TIMEOUT_HELP})
    p.set_defaults(func=run)


def run(args) -> int:
    path = Path(args.log_dir)
    if not path.is_dir():
        raise UserError(f"{path} is neither a run directory nor an llm4ad log folder "
                        f"({'a file' if path.exists() else 'no such directory'})")
    # a plugin run directory, or the host's log folder inside one: of a finished run, its records read as select
    # reads them (an unfinished run's folders are still written, or wait for a resume)
    owner = next((folder for folder in (path, path.parent) if (folder / "config.json").exists()), None)
    if owner is not None:
        load_config(owner)
        finished_summary(owner)
    recorded = recorded_run_config(args.log_dir)
    if args.task is None and not recorded.get("task"):
        raise UserError(f"--task: {args.log_dir} records no task (an llm4ad log folder, or no run at all): give "
                        "the task its programs were written for")
    task = resolve_task(args.task or recorded["task"])
    check_flags(args, ("epsilon", "refreshes", "top", "inner_population", "inner_generations", "suite_instances",
                       "workers", "seed", "timeout"))
    check_output(args.out, folder=True)
    check_recorded_task(args.log_dir, task, recorded)
    try:
        programs = load_run_programs(args.log_dir)
    except ProgramError as exc:
        raise UserError(str(exc)) from None
    try:  # the task's eps and A where not given, checked as a run's
        epsilon, aggregation = robust_settings(task, args.epsilon, args.aggregation)
    except UserError as exc:
        raise in_flag_words(exc, ("epsilon", "aggregation")) from None
    print(f"re-ranking the best {min(args.top, len(programs))} of {len(programs)} programs of {args.log_dir}")
    out = rerank(task.name, programs, epsilon=epsilon, refreshes=args.refreshes, top=args.top, aggregation=aggregation,
                 seed=args.seed, inner_population=args.inner_population, inner_generations=args.inner_generations,
                 workers=args.workers, timeout=args.timeout, progress=args.progress,
                 nominal_seed=run_nominal_seed(args.log_dir, recorded))
    if out["skipped"]:
        print(f"{out['skipped']} evaluations skipped: their programs had already failed in a way that repeats")
    chosen = out["programs"]
    by_original = sorted(chosen, key=lambda p: -p.original_score)
    by_robust = sorted(chosen, key=lambda p: -p.robust_score)
    robust_rank = {p.name: i + 1 for i, p in enumerate(by_robust)}
    body = [[p.name, str(i + 1), f"{p.original_score:.4f}", _cell(p.nominal_metric), _cell(p.robust_score),
             str(robust_rank[p.name])] for i, p in enumerate(by_original)]
    columns = ["program", "original rank", "original score", "nominal metric", "robust score", "robust rank"]
    headers = ["program", "original rank", "original score (higher is better)", "nominal metric (lower is better)",
               "robust score (higher is better)", "robust rank"]
    found = sum("metric" in f for f in out["adversarial"])
    caption = (f"Original score: the host's score the run recorded; robust score: minus the {aggregation} "
               f"aggregation of the metric over the nominal set and the {found} adversarial instance(s) found; "
               f"nominal metric: the mean over the nominal set. Metric: {task.metric_label}.")
    print(caption)
    print(render_table(headers, body))
    # why each failed, one line a program, as evaluate says it
    report_invalid(out["rows"], [p.name for p in chosen], where=" of the nominal set and the adversarial ones")
    for f in out["adversarial"]:
        if "failed" in f:
            print(f"{f['attacked']}: invalid: the search for its worst instance failed ({f['failed']})")

    suite = task.test_suite()
    if args.suite_instances:
        suite = [Dataset(d.family, d.params, d.instances[: args.suite_instances]) for d in suite]
    pair = [by_original[0]] if by_original[0] is by_robust[0] else [by_original[0], by_robust[0]]
    rows = evaluate_suite(task.name, [Heuristic(p.name, code=p.code) for p in pair], suite, workers=args.workers,
                          timeout=args.timeout, progress=args.progress)
    lines = []
    for p in pair:
        vals = [r.metric for r in rows if r.heuristic == p.name and r.valid]
        role = ("original and robust best" if len(pair) == 1 else
                "original best" if p is by_original[0] else "robust best")
        mean = sum(vals) / len(vals) if vals else float("nan")
        lines.append(f"{role} ({p.name}): mean test-suite metric {mean:.4f} over {len(vals)} instances "
                     f"({task.metric_label})")
    print("\n".join(lines))
    report_invalid(rows, [p.name for p in pair], where=" of the test suite")
    if args.out:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "rerank.csv").open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(columns)
            writer.writerows(body)
        (folder / "rerank.md").write_text(
            f"# Robust re-ranking of {args.log_dir} on {task.name}\n\n"
            f"eps {epsilon:g}, {found} adversarial instance(s) found in {args.refreshes} refresh(es), "
            f"aggregation {aggregation}.\n\n"
            + caption + "\n\n" + render_table(headers, body, markdown=True) + "\n\n"
            + "\n".join(f"- {x}" for x in lines) + "\n")
        for i, p in enumerate(by_robust[:3]):
            (folder / f"robust_best_{i + 1}.py").write_text(p.code)
        print(f"wrote {folder / 'rerank.md'}")
    valid = {p.name for p in chosen if math.isfinite(p.nominal_metric)} | {r.heuristic for r in rows if r.valid}
    return all_invalid_status("rerank", [p.name for p in chosen], valid)


def _cell(value: float) -> str:
    """A metric or score in the table: ``invalid`` where the program failed (as ``evaluate`` shows it)."""
    return f"{value:.4f}" if math.isfinite(value) else "invalid"
