"""Compare's results as CSV: one file per evaluated cell, written whole or not at all so that only
finished cells count as done, and ``results.csv``, every (method, seed, dataset, instance) result."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable

from raise_plugin.harness.compare_jobs import ROW_FIELDS

__all__ = ["write_rows", "read_rows", "collect_rows"]


def write_rows(path: Path, rows: list[dict]) -> None:
    """``rows`` to the CSV file ``path``, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=ROW_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)  # only finished cells count as done


def read_rows(path: Path) -> list[dict]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def collect_rows(out: Path, baselines: Iterable[str], cells: Iterable[str]) -> list[dict]:
    """Every baseline's rows, then those of every evaluated cell (``results/<name>.csv``), in that
    order, leaving out what was not evaluated (a failed job)."""
    rows: list[dict] = []
    for name in [f"baseline-{b}" for b in baselines] + list(cells):
        path = out / "results" / f"{name}.csv"
        if path.exists():
            rows += read_rows(path)
    return rows
