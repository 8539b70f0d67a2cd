"""A small compare from Python, with one import: train, evaluate, and read the table and a figure.

The task is the one-file load-balancing task beside this script, named by its file: no
packaging, no registration. Offline (no LLM, no network): 12 runs, most of the time EoH-S's, which
scores every program on its 128 diverse instances.

    python examples/compare_from_python.py [OUT [TASK]]

OUT defaults to compare-from-python, TASK to the load_balance.py beside this script. In the
folder of docs/tasks.md's walkthrough, ``python compare_from_python.py lb-compare
load_balance.py:LoadBalance`` names the task as its commands did: the compare finds the twelve
runs they trained and trains none again.
"""
import sys
from pathlib import Path

import raise_plugin as rp

TASK = f"{Path(__file__).resolve().parent / 'load_balance.py'}:LoadBalance"


def main(out: str = "compare-from-python", task_ref: str = TASK) -> None:
    task = rp.get_task(task_ref)
    print(f"task {task.name}: shift {task.shift.name}, baselines {', '.join(task.baselines)}")
    result = rp.compare(task_ref, methods=("eoh", "eohs", "moh"), budget=4, pop_size=2, tau=1, seeds=2,
                        suite_instances=1, jobs=1, out=out, quiet=True)
    print(result.tables["table_all_distributions"].markdown())
    for comparison in result.comparisons:  # rp.stats.Comparison: the paired test behind the marks
        print(f"{comparison.method} vs {comparison.reference} ({comparison.relation}): {comparison.verdict}")
    # variants by key (labels are for display); any pair's test, paired by seed against a trained reference
    robust = result.variant("moh", robust=True)
    print(f"{robust.key} vs moh-plain, by seed: {result.paired(robust, 'moh-plain').verdict}")
    # the figures are written for the report; draw one again here from the runs' records
    runs = {path.name: rp.RunLog.load(path) for path in sorted((result.out / "runs").iterdir())[:2]}
    figure = result.out / "convergence_again.png"
    rp.figures.plot_convergence(runs, figure)  # returns the matplotlib Figure; with no path, only returns it
    print("figures:", ", ".join(f.name for f in result.figures + [figure]))
    print("report:", result.report)


if __name__ == "__main__":
    main(*sys.argv[1:3])
