"""The paper's tables from per-instance results: rows are methods, columns are slices of the suite.

Every cell is the mean metric over the slice's instances for each seed, then the mean over
seeds with the half-width of its 95 % Student-t interval (the one meaning of ± in every
table and report); the line under a table's title names the metric, its unit and direction
and says what a cell and its ± are. Lower is better: the best value of a column is bold and
the second underlined. Given the baselines and each method's plain
twin, a cell also says whether the method differs significantly from the reference (the
classical rule chosen on the validation suite, else the column's best baseline: †) and from
its plain twin (‡), with + for better and − for worse (paired tests,
``raise_plugin.harness.stats``). A cell where some instances were invalid is marked § and
counted below the table. What is significant over the whole suite:
``raise_plugin.harness.significance``.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np

from raise_plugin.harness.stats import ALPHA, LEVEL, compare_paired, holm_adjust, mean_half_width, row_is_valid
from tasks.common.families import FAMILIES

__all__ = ["Column", "Table", "build_table", "layout_table", "family_columns", "size_columns", "param_columns",
           "parse_params", "lowest", "cell_text"]

FAMILY_LABELS = {"uniform": "Uniform", "normal": "Normal", "lognormal": "Lognormal",
                 "exponential": "Exponential", "triangular": "Triangular"}


def cell_text(text) -> str:
    """``text`` (a method's or a column's name) fit for a cell of a Markdown table: a ``|`` in it escaped,
    where it would end the cell."""
    return str(text).replace("|", "\\|")


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
    std: np.ndarray      # population standard deviation of the per-seed means (not shown in the table)
    seeds: np.ndarray    # how many seeds gave each cell
    invalid: np.ndarray  # invalid instances behind each cell
    average: bool = False  # whether the last column averages the others
    half: np.ndarray | None = None  # half-width of the 95 % t interval of the mean over seeds
    tests: dict = field(default_factory=dict)  # (row, column, "baseline" | "twin") -> Comparison
    metric: str = ""  # what a cell measures: the task's ``metric_label`` ("waste ratio (%), lower is better")
    reference: str | None = None  # the rule every column's † is tested against (chosen on the validation suite)

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

    def marks(self, i: int, j: int) -> str:
        """† vs the reference (else the column's best baseline), ‡ vs the plain twin, each with + (better)
        or − (worse), where the difference is significant; § where instances were invalid."""
        out = []
        for relation, symbol in (("baseline", "†"), ("twin", "‡")):
            test = self.tests.get((i, j, relation))
            if test is not None and test.significant:
                out.append(symbol + test.mark())
        if self.invalid[i, j]:
            out.append("§")
        return " ".join(out)

    def cell(self, i: int, j: int, digits: int = 3) -> str:
        m = self.mean[i, j]
        if math.isnan(m):
            return "— §" if self.invalid[i, j] else "—"
        text = f"{m:.{digits}f}"
        if self.seeds[i, j] > 1 and self.half is not None and math.isfinite(self.half[i, j]):
            text += f" ± {self.half[i, j]:.{digits}f}"
        marks = self.marks(i, j)
        return f"{text} {marks}" if marks else text

    def caption(self) -> str:
        """The line under the title: the metric (name, unit, direction), what a cell is and what its
        ± is, with the real numbers of seeds."""
        counts = sorted({int(n) for n in self.seeds.ravel() if n > 1})
        metric = self.metric or "the task's, lower is better"
        text = f"Metric: {metric}. Each cell: the mean over the column's instances"
        if counts:
            n = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"
            text += (f" for each seed, then over seeds ({n} seeds), ± the half-width of its {LEVEL * 100:g} % "
                     "Student-t interval over seeds; a cell without ± comes from one seed (the baselines are "
                     "deterministic)")
        return text + ". Best of a column **bold**, second <u>underlined</u>."

    def markdown(self, digits: int = 3) -> str:
        ranks = self.ranks()
        header = "| Method | " + " | ".join(map(cell_text, self.columns)) + " |"
        lines = [f"**{self.title}**", "", self.caption(), "", header,
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
            lines.append(f"| {cell_text(m)} | " + " | ".join(cells) + " |")
        return "\n".join(lines + [""] + self.footnotes()).rstrip()

    def marked(self) -> dict[tuple[str, str], list[str]]:
        """``(method, "baseline" | "twin") -> ["Uniform (better)", ...]``: the columns where the cell's
        own test marks the method significantly better or worse (the average column left out)."""
        out: dict[tuple[str, str], list[str]] = {}
        last = len(self.columns) - (1 if self.average else 0)
        for (i, j, relation), test in sorted(self.tests.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            if j < last and test is not None and test.significant:
                out.setdefault((self.methods[i], relation), []).append(f"{self.columns[j]} ({test.direction})")
        return out

    def _repr_markdown_(self) -> str:  # a notebook shows the table as it appears in report.md
        return self.markdown()

    def footnotes(self) -> list[str]:
        notes = []
        most = int(self.seeds.max()) if self.seeds.size else 0
        if self.tests:
            against = (f"{self.reference} (the best classical rule on the validation suite, in every column: another "
                       "may do better on the test suite)" if self.reference else "the column's best baseline")
            notes.append(f"† / ‡: differs significantly (Holm-adjusted p < {ALPHA:g} over all {len(self.tests)} tests "
                         f"of this table) from {against} / the method's plain twin, + better, − worse; "
                         "unmarked: no significant difference. Paired over (seed, instance), Wilcoxon signed-rank "
                         "and a bootstrap interval of the mean difference that must exclude 0.")
            if most == 1:
                notes.append("One seed: the interval resamples instances, not seeds, so no mark speaks to "
                             "seed-to-seed variation.")
        if self.invalid.any():
            counted = self.invalid[:, :-1] if self.average else self.invalid
            notes.append(f"§ some instances invalid for that method ({int(counted.sum())} in all); the mean is over "
                         "the valid ones (— where none is) and the tests drop those pairs.")
        return ["\n\n".join(notes)] if notes else []


def _seed_stats(sums: dict, method: str, n_columns: int, average: bool) -> tuple:
    """Per column: mean over seeds, std, t half-width, seeds, invalid (with the Avg. column last)."""
    width = n_columns + (1 if average else 0)
    mean, std, half = (np.full(width, math.nan) for _ in range(3))
    seeds, invalid = np.zeros(width, int), np.zeros(width, int)
    per_seed = defaultdict(dict)
    for (mm, seed, j), (s, c, bad) in sums.items():
        if mm == method:
            invalid[j] += bad
            if c:
                per_seed[seed][j] = s / c
    series = [[v[j] for v in per_seed.values() if j in v] for j in range(n_columns)]
    if average:
        series.append([np.mean([v[j] for j in range(n_columns)]) for v in per_seed.values()
                       if all(j in v for j in range(n_columns))])
        invalid[-1] = invalid[:-1].sum()
    for j, vals in enumerate(series):
        if vals:
            mean[j], std[j], half[j], seeds[j] = np.mean(vals), np.std(vals), mean_half_width(vals), len(vals)
    return mean, std, half, seeds, invalid


def build_table(rows: Iterable[dict], columns: list[Column], *, title: str, methods: list[str] | None = None,
                average: bool = True, rename: Mapping[str, str] | None = None, baselines: Iterable[str] = (),
                twins: Mapping[str, str] | None = None, reference: str | None = None) -> Table:
    """Aggregate per-instance ``rows`` (dicts with method, seed, family, params, metric, valid);
    ``rename`` gives display names for some methods (e.g. the plain run as "w/o Robust Search").

    With ``baselines`` (names) and ``twins`` (method -> its plain twin), every other method's
    cell is tested against ``reference`` (else the column's best baseline) and against its twin.
    """
    rows = [dict(r, _params=parse_params(r.get("params", {}))) for r in rows]
    members = [[j for j, col in enumerate(columns) if col.keep(r)] for r in rows]
    sums = defaultdict(lambda: [0.0, 0, 0])  # (method, seed, column) -> [sum, count, invalid]
    seen_methods = []
    for r, js in zip(rows, members):
        method = r["method"]
        if method not in seen_methods:
            seen_methods.append(method)
        valid = row_is_valid(r)
        for j in js:
            acc = sums[(method, str(r.get("seed", 0)), j)]
            if valid:
                acc[0] += float(r["metric"])
                acc[1] += 1
            else:
                acc[2] += 1
    methods = list(methods or seen_methods)
    baselines = [b for b in baselines if b in seen_methods]
    stats = {m: _seed_stats(sums, m, len(columns), average) for m in dict.fromkeys(methods + baselines)}
    mean, std, half, seeds, invalid = (np.array([stats[m][k] for m in methods]) for k in range(5))
    labels = [c.label for c in columns] + (["Avg."] if average else [])

    tests = {}
    if baselines or twins:
        slices = [[r for r, js in zip(rows, members) if j in js] for j in range(len(columns))]
        if average:
            slices.append([r for r, js in zip(rows, members) if js])
        for j, part in enumerate(slices):
            best = reference if reference in baselines else lowest({b: stats[b][0][j] for b in baselines})
            for i, m in enumerate(methods):
                if m in baselines or m not in seen_methods:
                    continue
                if best is not None:
                    tests[(i, j, "baseline")] = compare_paired(part, m, best, "best baseline")
                twin = (twins or {}).get(m)
                if twin in seen_methods:
                    tests[(i, j, "twin")] = compare_paired(part, m, twin, "plain twin", by_seed=True)
    tests = holm_adjust(tests)  # one family per table: every mark of the table, Holm-corrected together
    shown = [(rename or {}).get(m, m) for m in methods]
    return Table(title, shown, labels, mean, std, seeds, invalid, average, half, tests,
                 reference=reference if reference in baselines else None)


def layout_table(layout, rows: list[dict], **options) -> Table | None:
    """The table a task's ``TableLayout`` asks for, over the datasets present in ``rows``;
    ``None`` when none of them is in the layout's slices. ``options`` go to ``build_table``
    (``methods``, ``baselines``, ``twins``)."""
    present = [parse_params(r["params"]) for r in rows]
    if layout.by == "family":
        if layout.at and not any(all(p.get(k) == v for k, v in layout.at.items()) for p in present):
            return None
        columns = family_columns(**layout.at)
    else:
        keys = tuple(layout.keys) or tuple(dict.fromkeys(k for p in present for k in p))
        combos = sorted({tuple(p[k] for k in keys) for p in present if all(k in p for k in keys)})
        if not keys or not combos:
            return None
        if layout.label is not None:
            columns = param_columns(keys[0], [c[0] for c in combos], layout.label.format)
        else:
            columns = size_columns(keys, combos)
    return build_table(rows, columns, title=layout.title, average=layout.average, **options)


def lowest(values: Mapping[str, float]) -> str | None:
    """The name with the lowest finite value (the strongest baseline: lower is better); ``None``: none."""
    finite = {k: v for k, v in values.items() if math.isfinite(v)}
    return min(finite, key=finite.get) if finite else None
