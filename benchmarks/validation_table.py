"""The validation-suite table of a compare: each run's final best on the validation suite, mean over seeds.

Every run of ``raise-ahd compare`` traces its best program's validation metric every ``tau``
generations (``runs/<variant>-seed<N>/validation.jsonl``); the last line is the program the run
hands on (its robust best). This prints, per variant, the mean validation metric over seeds with
the half-width of its 95 % t interval (the harness's ``mean_half_width``), the seeds that beat
the best baseline, and the baselines' validation metrics; a run that has not finished is left out, a line
saying so. The test suite is not read.

Usage: python benchmarks/validation_table.py COMPARE_DIR [COMPARE_DIR ...]
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raise_plugin.harness.stats import mean_half_width  # noqa: E402
from raise_plugin.rundir.files import read_json  # noqa: E402
from raise_plugin.validation import read_trace  # noqa: E402

LABELS = {"eoh": "EoH", "reevo": "ReEvo", "partevo": "PartEvo", "eohs": "EoH-S", "moh": "MoH", "gp": "GP"}


def last_trace(run: Path) -> dict | None:
    """The run's last validation point (a line cut short by a kill passed over), ``None`` when it has none."""
    points = read_trace(run)
    return points[-1] if points else None


def table(compare_dir: Path) -> str:
    per_variant: dict[str, list[float]] = defaultdict(list)
    baseline, left_out = None, []
    for run in sorted((compare_dir / "runs").iterdir()):
        found = re.match(r"(.+?)-(plain|raise-eps([0-9.]+))-seed(\d+)$", run.name)
        trace = last_trace(run) if found else None
        if trace is None:
            continue
        summary = read_json(run / "summary.json")
        if not (isinstance(summary, dict) and summary.get("finished")):  # its last point is no final program
            left_out.append(f"left out: {run} has not finished (raise-ahd resume {run})")
            continue
        method, kind = found.group(1), found.group(2)
        label = LABELS.get(method, method) if kind == "plain" else f"RAISE-{LABELS.get(method, method)} (eps={found.group(3)})"
        metric = trace.get("validation_metric")  # None: the program failed on every validation instance
        per_variant[label].append(math.inf if metric is None else float(metric))
        baseline = trace.get("best_baseline") or baseline
    out = [f"{compare_dir.name}: validation suite, each run's final best",
           "", "| variant | seeds | validation metric (mean ± 95 % t half-width) | seeds better than the best baseline |",
           "|---|---|---|---|"]
    for label, values in per_variant.items():
        better = sum(v < baseline["metric"] for v in values) if baseline else 0
        half = mean_half_width(values) if len(values) > 1 and all(map(math.isfinite, values)) else math.nan
        out.append(f"| {label} | {len(values)} | {sum(values) / len(values):.4f} ± {half:.4f} | {better} |")
    if baseline:
        out.append(f"| {baseline['name']} (best baseline) | - | {baseline['metric']:.4f} | - |")
    if not per_variant:
        out.append(f"no finished run in {compare_dir / 'runs'} has a validation trace (made with --no-validation-trace"
                   "?): raise_plugin.validation.trace_run_directory(RUN_DIR, task) computes one after the fact")
    return "\n".join(out + left_out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compare_dirs", nargs="+", type=Path)
    args = parser.parse_args()
    for d in args.compare_dirs:
        if not (d / "runs").is_dir():
            parser.error(f"{d}: not a compare's output folder (no runs/ in it); give the --out of raise-ahd compare")
    for d in args.compare_dirs:
        print(table(d))
        print()


if __name__ == "__main__":
    main()
