"""``raise-ahd demo``: the main job of the README, offline by default."""
from __future__ import annotations

from pathlib import Path

from raise_plugin.harness.suite_eval import Heuristic, evaluate_suite
from raise_plugin.harness.tables import dataset_means, render_table, write_rows_csv
from tasks import get_task


def register(sub) -> None:
    p = sub.add_parser("demo", help="the main job: a robust search and comparison on a task, offline")
    p.add_argument("--task", default="obp")
    p.add_argument("--out", default="demo-out")
    p.add_argument("--workers", type=int, default=None)
    p.set_defaults(func=run)


def run(args) -> int:
    task = get_task(args.task)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    heuristics = [Heuristic(name, baseline=name) for name in task.baselines]
    rows = evaluate_suite(task.name, heuristics, task.test_suite(), workers=args.workers)
    write_rows_csv(rows, out / "results.csv")
    names, datasets, means = dataset_means(rows)
    body = [[family, params.replace(";", " ")] + [f"{means[(d, h)][0]:.3f}" for h in names]
            for d, family, params in datasets]
    table = render_table(["family", "sizes"] + names, body, markdown=True)
    (out / "baselines.md").write_text(f"# {task.name}: baselines on the test suite\n\n{table}\n")
    print(render_table(["family", "sizes"] + names, body))
    print(f"wrote {out / 'results.csv'} and {out / 'baselines.md'}")
    return 0
