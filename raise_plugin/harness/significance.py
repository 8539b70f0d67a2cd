"""What is significant over the whole test suite: every method against the reference (the best
classical rule, chosen on the validation suite, else the best baseline) and against its plain twin,
paired over (seed, instance); as a table (``significance_markdown``) and in sentences
(``significance_summary``) that agree with the marks of the per-distribution table
(``raise_plugin.harness.paper_tables``)."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Iterable, Mapping

import numpy as np

from raise_plugin.harness.paper_tables import Table, cell_text, lowest
from raise_plugin.harness.stats import ALPHA, LEVEL, Comparison, compare_paired, format_p, format_signed, row_is_valid

__all__ = ["best_baseline", "significance", "significance_markdown", "significance_summary", "NO_COMPARISON",
           "NO_RESULTS"]

# what the significance table (and report.md's "What is significant") says in place of rows when it has none,
# so that neither is left empty or left out
NO_RESULTS = ("No comparison: no method has results on the test suite beside valid results of a baseline or of "
              "its plain twin")
NO_COMPARISON = f"{NO_RESULTS} (a failed job's cells are left out; report.md lists the failed jobs and why)."


def best_baseline(rows: Iterable[dict], baselines: Iterable[str], chosen: str | None = None) -> str | None:
    """``chosen`` (the best classical rule, selected on the validation suite) where it has results, else
    the baseline with the lowest mean metric over its valid results (the strongest comparator)."""
    totals = defaultdict(list)
    names = set(baselines)
    for r in rows:
        if r["method"] in names | {chosen} and row_is_valid(r):
            totals[r["method"]].append(float(r["metric"]))
    return chosen if chosen in totals else lowest({b: float(np.mean(v)) for b, v in totals.items() if b in names})


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
    """One row per comparison: mean difference, interval, p, pairs, verdict in words (with none, a sentence
    saying so, ``NO_COMPARISON``)."""
    if not comparisons:
        return f"**{title}**\n\n{NO_COMPARISON}"
    lines = [f"**{title}**", "",
             "| Method | compared with | mean difference | 95 % bootstrap CI | Wilcoxon p, Holm-adjusted | pairs | seeds | verdict |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for c in comparisons:
        pairs = f"{c.pairs}" + (f" ({c.dropped} dropped)" if c.dropped else "")
        interval = ("—" if math.isnan(c.low) else
                    f"[{format_signed(c.low, digits)}, {format_signed(c.high, digits)}]")
        lines.append(f"| {cell_text(c.method)} | {cell_text(c.reference)} ({c.relation}) | "
                     f"{format_signed(c.mean, digits)} | {interval} | "
                     f"{format_p(c.p, c.alpha)} | {pairs} | {c.seeds} | {c.verdict} |")
    over_instances = any(c.over == "instances" and c.pairs for c in comparisons)  # with pairs: one seed
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
                         table: Table | None = None) -> list[str]:
    """What is and what is not significant, in sentences (for report.md and the printed summary).

    Each verdict is over the whole test suite, and significant means both tests say so: the
    Wilcoxon test over (seed, instance) pairs and the bootstrap interval over seeds; the sentence
    says which one refused when they disagree. ``table`` (per distribution, averaged over all sizes:
    ``table_all_distributions``) adds the columns
    where its per-cell tests mark the method (``Table.marked``), so the sentence and the table's marks
    agree; its ``reference``, the rule chosen on the validation suite, is named as such.
    A printed p and its verdict come from the same number (``stats.format_p``), and the closing
    words on few seeds follow the seeds the comparisons rest on (``seeds`` when none has pairs)."""
    lines = []
    seeds = max((c.seeds for c in comparisons if c.pairs), default=seeds)
    chosen = table.reference if table is not None else None
    slices = table.marked() if table is not None else {}
    for c in comparisons:
        relation = "baseline" if c.relation == "best baseline" else "twin" if c.relation == "plain twin" else ""
        chosen_here = relation == "baseline" and c.reference == chosen
        named = f"{c.relation} on the validation suite" if chosen_here else c.relation
        head = f"{c.method} vs {c.reference} ({named}), whole test suite"
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
        marked = slices.get((c.method, relation))
        if marked:
            against = (chosen or "the column's best baseline") if relation == "baseline" else "its plain twin"
            lines[-1] += (f" Per distribution, over all sizes (the † / ‡ marks of the table averaged over all "
                          f"sizes, each cell tested on its own instances against {against}): significant on "
                          f"{', '.join(marked)}.")
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

