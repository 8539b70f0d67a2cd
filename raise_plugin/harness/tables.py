"""Results as tables: per-dataset means, written as aligned text, Markdown or CSV."""
from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path

__all__ = ["write_rows_csv", "dataset_means", "render_table"]


def write_rows_csv(rows, path: str | Path) -> None:
    """One line per (heuristic, instance) result."""
    rows = list(rows)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        if not rows:
            return
        writer = csv.DictWriter(fh, fieldnames=list(rows[0].as_dict()))
        writer.writeheader()
        for r in rows:
            writer.writerow(r.as_dict())


def dataset_means(rows) -> tuple[list[str], list[tuple[str, str, str]], dict]:
    """Heuristic names, datasets (name, family, params) in first-seen order, and
    ``{(dataset, heuristic): (mean metric over valid instances, invalid count)}``."""
    heuristics, datasets, values = [], [], defaultdict(list)
    invalid = defaultdict(int)
    for r in rows:
        if r.heuristic not in heuristics:
            heuristics.append(r.heuristic)
        key = (r.dataset, r.family, r.params)
        if key not in datasets:
            datasets.append(key)
        if r.valid:
            values[(r.dataset, r.heuristic)].append(r.metric)
        else:
            invalid[(r.dataset, r.heuristic)] += 1
    means = {}
    for d, _, _ in datasets:
        for h in heuristics:
            vals = values.get((d, h), [])
            means[(d, h)] = (sum(vals) / len(vals) if vals else math.nan, invalid.get((d, h), 0))
    return heuristics, datasets, means


def render_table(headers: list[str], body: list[list[str]], markdown: bool = False) -> str:
    """Aligned plain text, or a Markdown table."""
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *body)]
    fmt = lambda row: "  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths)))
    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in body])
