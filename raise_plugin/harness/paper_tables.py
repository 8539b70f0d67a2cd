"""The paper's tables from per-instance results: rows are methods, columns are slices of the suite.

Every cell is the mean metric over the slice's instances for each seed, then the mean over
seeds with the half-width of its 95 % Student-t interval (the one meaning of ± in every
table and report); the line under a table's title names the metric, its unit and direction
and says what a cell and its ± are. Lower is better: the best value of a column is bold and
the second underlined. Given the baselines and each method's plain
twin, a cell also says whether the method differs significantly from the column's best
baseline (†) and from its plain twin (‡), with + for better and − for worse (paired tests,
``raise_plugin.harness.stats``). A cell where some instances were invalid is marked § and
counted below the table.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

import numpy as np

from raise_plugin.harness.stats import (ALPHA, LEVEL, Comparison, compare_paired, format_p, format_signed,
                                        holm_adjust, mean_half_width, row_is_valid)
from tasks.common.families import FAMILIES

__all__ = ["Column", "Table", "build_table", "layout_table", "family_columns", "size_columns", "param_columns",
           "parse_params", "significance", "significance_markdown", "significance_summary", "best_baseline"]

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
    std: np.ndarray      # population standard deviation of the per-seed means (not shown in the table)
    seeds: np.ndarray    # how many seeds gave each cell
    invalid: np.ndarray  # invalid instances behind each cell
    average: bool = False  # whether the last column averages the others
    half: np.ndarray | None = None  # half-width of the 95 % t interval of the mean over seeds
    tests: dict = field(default_factory=dict)  # (row, column, "baseline" | "twin") -> Comparison
    metric: str = ""  # what a cell measures: the task's ``metric_label`` ("waste ratio (%), lower is better")

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
        """† vs the column's best baseline, ‡ vs the plain twin, each with + (better) or − (worse),
        where the difference is significant; § where instances were invalid."""
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
            return "—"
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
        lines = [f"**{self.title}**", "", self.caption(), "", "| Method | " + " | ".join(self.columns) + " |",
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
            notes.append(f"† / ‡: differs significantly (Holm-adjusted p < {ALPHA:g} over all {len(self.tests)} tests "
                         "of this table) from the column's best baseline / the method's plain twin, + better, − worse; "
                         "unmarked: no significant difference. Paired over (seed, instance), Wilcoxon signed-rank "
                         "and a bootstrap interval of the mean difference that must exclude 0.")
            if most == 1:
                notes.append("One seed: the interval resamples instances, not seeds, so no mark speaks to "
                             "seed-to-seed variation.")
        if self.invalid.any():
            counted = self.invalid[:, :-1] if self.average else self.invalid
            notes.append(f"§ some instances invalid for that method ({int(counted.sum())} in all); the mean is over "
                         "the valid ones and the tests drop those pairs.")
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
            best = reference if reference in baselines else _lowest({b: stats[b][0][j] for b in baselines})
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
    return Table(title, shown, labels, mean, std, seeds, invalid, average, half, tests)


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


def _lowest(values: Mapping[str, float]) -> str | None:
    finite = {k: v for k, v in values.items() if math.isfinite(v)}
    return min(finite, key=finite.get) if finite else None


def best_baseline(rows: Iterable[dict], baselines: Iterable[str], chosen: str | None = None) -> str | None:
    """``chosen`` (the best classical rule, selected on the validation suite) where it has results, else
    the baseline with the lowest mean metric over its valid results (the strongest comparator)."""
    totals = defaultdict(list)
    names = set(baselines)
    for r in rows:
        if r["method"] in names | {chosen} and row_is_valid(r):
            totals[r["method"]].append(float(r["metric"]))
    return chosen if chosen in totals else _lowest({b: float(np.mean(v)) for b, v in totals.items() if b in names})


def significance(rows: Iterable[dict], methods: Iterable[str], baselines: Iterable[str],
                 twins: Mapping[str, str] | None = None, chosen: str | None = None) -> list[Comparison]:
    """Every non-baseline method against ``chosen``, else the best baseline (over the whole suite), and against its
    plain twin, paired over (seed, instance)."""
    rows = list(rows)
    baselines = list(baselines)
    present = {r["method"] for r in rows}
    best = best_baseline(rows, baselines, chosen)
    out = []
    for m in methods:
        if m in baselines or m not in present:
            continue
        if best is not None:
            out.append(compare_paired(rows, m, best, "best baseline"))
        twin = (twins or {}).get(m)
        if twin in present:
            out.append(compare_paired(rows, m, twin, "plain twin", by_seed=True))
    return out


def significance_markdown(comparisons: list[Comparison], title: str, digits: int = 3) -> str:
    """One row per comparison: mean difference, interval, p, pairs, verdict in words."""
    lines = [f"**{title}**", "",
             "| Method | compared with | mean difference | 95 % bootstrap CI | Wilcoxon p, Holm-adjusted | pairs | seeds | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for c in comparisons:
        pairs = f"{c.pairs}" + (f" ({c.dropped} dropped)" if c.dropped else "")
        interval = ("—" if math.isnan(c.low) else
                    f"[{format_signed(c.low, digits)}, {format_signed(c.high, digits)}]")
        lines.append(f"| {c.method} | {c.reference} ({c.relation}) | {format_signed(c.mean, digits)} | {interval} | "
                     f"{format_p(c.p, c.alpha)} | {pairs} | {c.seeds} | {c.verdict} |")
    over_instances = any(c.over == "instances" for c in comparisons)
    lines += ["", "Difference = method − reference on the same instance (a baseline's value is repeated for "
              "every seed; the plain twin is matched by seed); lower is better, so negative means the method "
              f"is better. Significant: two-sided Wilcoxon signed-rank p < {ALPHA:g} (Holm-adjusted over the table's rows) over the (seed, instance) "
              f"pairs and the {LEVEL * 100:g} % percentile bootstrap interval of the mean difference, resampling "
              "seeds, excludes 0. Pairs with an invalid side are dropped and counted."]
    if over_instances:
        lines.append("With one seed the interval resamples instances only and says nothing about "
                     "seed-to-seed variation.")
    return "\n".join(lines)


def significance_summary(comparisons: list[Comparison], seeds: int, digits: int = 3,
                         slices: Mapping[tuple[str, str], list[str]] | None = None) -> list[str]:
    """What is and what is not significant, in sentences (for report.md and the printed summary).

    Each verdict is over the whole test suite, and significant means both tests say so: the
    Wilcoxon test over (seed, instance) pairs and the bootstrap interval over seeds; the sentence
    says which one refused when they disagree. ``slices`` (``Table.marked()``) adds the columns
    where a table's per-cell test marks the method, so the sentence and the table's marks agree.
    A printed p and its verdict come from the same number (``stats.format_p``), and the closing
    words on few seeds follow the seeds the comparisons rest on (``seeds`` when none has pairs)."""
    lines = []
    seeds = max((c.seeds for c in comparisons if c.pairs), default=seeds)
    for c in comparisons:
        head = f"{c.method} vs {c.reference} ({c.relation}), whole test suite"
        if c.pairs == 0:
            lines.append(f"{head}: no valid pairs, nothing to test.")
            continue
        p = format_p(c.p, c.alpha)
        numbers = (f"mean difference {format_signed(c.mean, digits)}, {LEVEL * 100:g} % bootstrap CI over {c.over} "
                   f"[{format_signed(c.low, digits)}, {format_signed(c.high, digits)}], "
                   f"p {'' if p.startswith('<') else '= '}{p}, {c.pairs} pairs")
        if c.dropped:
            numbers += f", {c.dropped} dropped as invalid"
        if c.significant:
            lines.append(f"{head}: **{c.direction}, significant** ({numbers}).")
        elif c.verdict.startswith("no difference"):
            lines.append(f"{head}: identical results on every pair.")
        elif c.p < c.alpha:
            lines.append(f"{head}: not significant ({numbers}): the Wilcoxon test over pairs alone would call it "
                         f"significant, but the {LEVEL * 100:g} % interval over {c.over} includes 0, and a difference "
                         "is called significant only when both agree"
                         + ("; it depends on the seed." if c.over == "seeds" else "."))
        elif not (c.low > 0 or c.high < 0):
            lines.append(f"{head}: not significant ({numbers}): neither the Wilcoxon test nor the interval "
                         f"over {c.over} finds a difference.")
        else:
            lines.append(f"{head}: not significant ({numbers}): the interval excludes 0 but the Wilcoxon test "
                         "over pairs does not reject, and a difference is called significant only when both "
                         "agree.")
        relation = "baseline" if c.relation == "best baseline" else "twin" if c.relation == "plain twin" else ""
        marked = (slices or {}).get((c.method, relation))
        if marked:
            against = "the column's best baseline" if relation == "baseline" else "its plain twin"
            lines[-1] += (f" Per distribution (the table's † / ‡ marks, each cell tested on its own instances "
                          f"against {against}): significant on {', '.join(marked)}.")
    if seeds == 1:
        lines.append("One seed: the intervals resample instances, not seeds, so none of these differences is "
                     "established across seeds.")
    elif seeds < 5:
        # the bootstrap's distinct resamples are the multisets of the seeds; when drawing one seed every
        # time is likelier than the tail, the interval reaches the extreme per-seed means
        extremes = (f", and its {LEVEL * 100:g} % interval is about the range of the {seeds} per-seed means: it "
                    "excludes 0 only when every seed agrees in sign") if seeds ** -seeds >= (1 - LEVEL) / 2 else ""
        lines.append(f"Only {seeds} seeds: a difference is established only where it is marked significant above; "
                     f"the others cannot be told from seed noise. With {seeds} seeds the bootstrap over seeds has "
                     f"only {math.comb(2 * seeds - 1, seeds)} distinct resamples{extremes}. So even a significant "
                     "verdict rests on few seeds; `raise-ahd compare` defaults to 5.")
    return lines

