"""Does choosing a run's final program on the validation suite pay off on validation instances it did not see?

Reads what ``robust_settings.py`` measured (its ``validation_cache.json``: every final
population member's metric on each validation instance, two per dataset) and splits the
validation suite in two halves: half A (instance 0 of each dataset) chooses among a run's
last population, half B (instance 1) scores the choice against the run's robust best. No
program is evaluated again and the test suite is not read.

    python benchmarks/final_selection.py grid-obp          # the OUT of robust_settings.py
    python benchmarks/final_selection.py grid-obp --exclude seen.txt   # only runs not listed there

``--exclude`` names runs (one per line) to leave out, e.g. those a decision was made on, so
the runs trained since confirm or refute it on their own.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.stats import wilcoxon

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raise_plugin.validation import final_candidates  # noqa: E402
from tasks import get_task  # noqa: E402


def half(results: list[dict], index: int) -> float:
    values = [r["metric"] if r["metric"] is not None else math.inf for r in results if r["instance"] == index]
    return float(np.mean(values))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="the --out directory of robust_settings.py")
    p.add_argument("--exclude", help="a file naming runs to leave out, one per line")
    args = p.parse_args(argv)
    out = Path(args.out)
    for needed in ("validation_cache.json", "settings.json"):
        if not (out / needed).is_file():
            p.error(f"{out}: no {needed}; give the --out of robust_settings.py, after its runs were evaluated")
    if args.exclude and not Path(args.exclude).is_file():
        p.error(f"--exclude {args.exclude}: no such file")
    excluded = set(Path(args.exclude).read_text().split()) if args.exclude else set()
    cache = json.loads((out / "validation_cache.json").read_text())
    task = json.loads((out / "settings.json").read_text())["task"]
    baseline = min((b for b in get_task(task).baselines if b in cache), key=lambda b: half(cache[b], 1), default=None)
    rows = []
    for run in sorted((out / "runs").iterdir()):
        if run.name in excluded:
            continue
        summary_file = run / "summary.json"
        if not summary_file.exists() or not json.loads(summary_file.read_text()).get("finished"):
            continue
        final = final_candidates(run)
        if final is None:
            continue
        best, members = final["best"], list(final["codes"])
        if any(m not in cache for m in members):
            print(f"left out: {run.name} (not evaluated by robust_settings.py yet)")
            continue
        chosen = min(members, key=lambda pid: half(cache[pid], 0))
        rows.append((run.name, half(cache[best], 1), half(cache[chosen], 1)))
    print(f"| run | robust best, half B | chosen on half A, half B | difference |\n|---|---:|---:|---:|")
    for name, robust, chosen in rows:
        print(f"| {name} | {robust:.3f} | {chosen:.3f} | {chosen - robust:+.3f} |")
    d = np.array([c - r for _, r, c in rows])
    if not len(d):
        return 0
    nonzero = d[np.abs(d) > 1e-9]
    p_value = wilcoxon(nonzero).pvalue if len(nonzero) > 1 else float("nan")
    print(f"\n{len(rows)} runs; chosen on half A minus robust best, on half B: mean {d.mean():+.3f}, median "
          f"{np.median(d):+.3f}; better {int((d < -1e-9).sum())}, worse {int((d > 1e-9).sum())}, the same "
          f"program or equal {int((np.abs(d) <= 1e-9).sum())}; Wilcoxon p {p_value:.2g}"
          + (f"; {baseline} on half B: {half(cache[baseline], 1):.3f}" if baseline else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
