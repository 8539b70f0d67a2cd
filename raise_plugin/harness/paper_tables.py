"""The paper's tables from per-instance results: rows are methods, columns are slices of the suite.

Every cell is the mean metric over the slice's instances for each seed, then the mean
(and, with several seeds, the standard deviation) over seeds. Lower is better: the best
value of a column is bold and the second underlined. A cell where some instances were
invalid for a method is marked with a dagger and counted below the table.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np

from tasks.common.families import FAMILIES

__all__ = ["Column", "Table", "build_table", "family_columns", "size_columns", "param_columns", "parse_params"]

FAMILY_LABELS = {"uniform": "Uniform", "normal": "Normal", "lognormal": "Lognormal",
                 "exponential": "Exponential", "triangular": "Triangular"}


def parse_params(params) -> dict:
    """Dataset sizes from a dict or from the CSV form ``"n=5000;C=200"``."""
    if isinstance(params, Mapping):
        return dict(params)
    out = {}
    for part in str(params).split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = int(v) if v.lstrip("-").isdigit() else v
    return out


@dataclass(frozen=True)
class Column:
    label: str
    keep: Callable[[dict], bool]


def family_columns(families: Iterable[str] = FAMILIES, **sizes) -> list[Column]:
    """One column per family, optionally at one size (e.g. ``n=5000, C=200``)."""
    def make(f):
        return Column(FAMILY_LABELS.get(f, f), lambda r, f=f: r["family"] == f and _matches(r, sizes))
    return [make(f) for f in families]


def size_columns(keys: tuple[str, ...], values: Iterable[tuple]) -> list[Column]:
    """One column per combination of sizes, averaged over families (``keys=("C", "n")``)."""
    def make(combo):
        label = ", ".join(f"{k}={v}" for k, v in zip(keys, combo))
        return Column(label, lambda r, combo=combo: _matches(r, dict(zip(keys, combo))))
    return [make(tuple(c)) for c in values]


def param_columns(key: str, values: Iterable, label: Callable[[object], str] = str) -> list[Column]:
    """One column per value of one size parameter (OJSP machines, OVRP vehicles)."""
    return [Column(label(v), lambda r, v=v: _matches(r, {key: v})) for v in values]


def _matches(row: dict, sizes: dict) -> bool:
    params = row["_params"]
    return all(params.get(k) == v for k, v in sizes.items())


@dataclass
class Table:
    title: str
    methods: list[str]
    columns: list[str]
    mean: np.ndarray     # methods x columns
    std: np.ndarray
    seeds: np.ndarray    # how many seeds gave each cell
    invalid: np.ndarray  # invalid instances behind each cell
    average: bool = False  # whether the last column averages the others

    def ranks(self) -> np.ndarray:
        """0 for the best (lowest) value of a column, 1 for the second, else 2."""
        r = np.full(self.mean.shape, 2)
        for j in range(self.mean.shape[1]):
            col = self.mean[:, j]
            order = [i for i in np.argsort(col, kind="stable") if not math.isnan(col[i])]
            distinct = sorted(set(np.round(col[order], 12)))
            for i in order:
                v = round(col[i], 12)
                if v == distinct[0]:
                    r[i, j] = 0
                elif len(distinct) > 1 and v == distinct[1]:
                    r[i, j] = 1
        return r

    def cell(self, i: int, j: int, digits: int = 3) -> str:
        m = self.mean[i, j]
        if math.isnan(m):
            return "—"
        text = f"{m:.{digits}f}"
        if self.seeds[i, j] > 1:
            text += f" ± {self.std[i, j]:.{digits}f}"
        if self.invalid[i, j]:
            text += " †"
        return text

    def markdown(self, digits: int = 3) -> str:
        ranks = self.ranks()
        lines = [f"**{self.title}**", "", "| Method | " + " | ".join(self.columns) + " |",
                 "|---|" + "|".join("---:" for _ in self.columns) + "|"]
        for i, m in enumerate(self.methods):
            cells = []
            for j in range(len(self.columns)):
                text = self.cell(i, j, digits)
                if ranks[i, j] == 0:
                    text = f"**{text}**"
                elif ranks[i, j] == 1:
                    text = f"<u>{text}</u>"
                cells.append(text)
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        if self.invalid.any():
            counted = self.invalid[:, :-1] if self.average else self.invalid
            lines += ["", f"† some instances invalid for that method ({int(counted.sum())} in all); "
                          "the mean is over the valid ones."]
        return "\n".join(lines)


def build_table(rows: Iterable[dict], columns: list[Column], *, title: str, methods: list[str] | None = None,
                average: bool = True, rename: Mapping[str, str] | None = None) -> Table:
    """Aggregate per-instance ``rows`` (dicts with method, seed, family, params, metric, valid);
    ``rename`` gives display names for some methods (e.g. the plain run as "w/o Robust Search")."""
    sums = defaultdict(lambda: [0.0, 0, 0])  # (method, seed, column) -> [sum, count, invalid]
    seen_methods = []
    for raw in rows:
        r = dict(raw)
        r["_params"] = parse_params(r.get("params", {}))
        method = r["method"]
        if method not in seen_methods:
            seen_methods.append(method)
        valid = str(r.get("valid", True)).lower() not in ("false", "0")
        metric = float(r["metric"]) if valid else math.nan
        for j, col in enumerate(columns):
            if col.keep(r):
                acc = sums[(method, str(r.get("seed", 0)), j)]
                if valid and not math.isnan(metric):
                    acc[0] += metric
                    acc[1] += 1
                else:
                    acc[2] += 1
    methods = methods or seen_methods
    labels = [c.label for c in columns] + (["Avg."] if average else [])
    n_m, n_c = len(methods), len(labels)
    mean, std = np.full((n_m, n_c), math.nan), np.full((n_m, n_c), math.nan)
    seeds, invalid = np.zeros((n_m, n_c), int), np.zeros((n_m, n_c), int)
    for i, m in enumerate(methods):
        per_seed = defaultdict(dict)
        for (mm, seed, j), (s, c, bad) in sums.items():
            if mm == m:
                invalid[i, j] += bad
                if c:
                    per_seed[seed][j] = s / c
        for j in range(len(columns)):
            vals = [v[j] for v in per_seed.values() if j in v]
            if vals:
                mean[i, j], std[i, j], seeds[i, j] = np.mean(vals), np.std(vals), len(vals)
        if average:
            avgs = [np.mean([v[j] for j in range(len(columns))]) for v in per_seed.values()
                    if all(j in v for j in range(len(columns)))]
            if avgs:
                mean[i, -1], std[i, -1], seeds[i, -1] = np.mean(avgs), np.std(avgs), len(avgs)
            invalid[i, -1] = invalid[i, :-1].sum()
    shown = [(rename or {}).get(m, m) for m in methods]
    return Table(title, shown, labels, mean, std, seeds, invalid, average)
