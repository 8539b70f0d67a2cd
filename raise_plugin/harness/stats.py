"""Paired statistics for the harness: is a method's difference to a reference more than seed noise?

A method's metric on instance i with seed s is paired with the reference's metric on the
same instance (a deterministic baseline's single value is repeated for every seed; a
trained reference, such as the plain twin of a robust run, is matched by seed). Over all
(seed, instance) pairs: a two-sided Wilcoxon signed-rank test (zero differences split
between the signs, ``zero_method="zsplit"``) and a 95 % percentile bootstrap interval of
the mean difference that resamples whole seeds. Lower metrics are better, so a negative
difference means the method is better. Pure functions; the bootstrap RNG has a fixed seed,
so every table is reproducible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable

import numpy as np

from ..errors import BadArgument, UserError

__all__ = ["ALPHA", "LEVEL", "RESAMPLES", "BOOTSTRAP_SEED", "Paired", "Comparison", "pair_rows", "wilcoxon_p",
           "bootstrap_ci", "compare_paired", "mean_half_width", "row_is_valid", "format_p", "format_signed", "holm",
           "holm_adjust"]

ALPHA = 0.05          # significance level of every test
LEVEL = 0.95          # coverage of every interval
RESAMPLES = 2000      # bootstrap resamples (B)
BOOTSTRAP_SEED = 2024  # fixed: the same results give the same intervals
ZERO_METHOD = "zsplit"


def row_is_valid(row: dict) -> bool:
    """A result row counts when it is marked valid and its metric is a finite number."""
    if str(row.get("valid", True)).lower() in ("false", "0"):
        return False
    try:
        return math.isfinite(float(row["metric"]))
    except (TypeError, ValueError):
        return False


def _instance_key(row: dict) -> tuple:
    dataset = row.get("dataset") or f"{row.get('family')}|{row.get('params')}"
    return str(dataset), str(row.get("instance", 0))


@dataclass(frozen=True)
class Paired:
    """Differences ``method - reference``: one row per seed, one column per instance; NaN where
    the pair was dropped (either side invalid or missing)."""

    diff: np.ndarray
    seeds: tuple
    dropped: int

    @property
    def values(self) -> np.ndarray:
        return self.diff[np.isfinite(self.diff)]


def pair_rows(rows: Iterable[dict], method: str, reference: str, *, by_seed: bool = False) -> Paired:
    """Pair ``method``'s per-instance results with ``reference``'s over (seed, instance).

    ``rows`` are result dicts (method, seed, dataset or family and params, instance, metric,
    valid). ``by_seed=False`` (the default): the reference is deterministic (a baseline, results under one
    seed) and its value on an instance is paired with every seed of the method.
    ``by_seed=True``: the reference was trained too (the plain twin) and pairs share the seed.
    A pair whose either side is invalid or missing is dropped and counted in ``dropped``.
    """
    mine: dict[str, dict[tuple, float]] = {}
    theirs: dict[str, dict[tuple, float]] = {}
    present = set()
    for r in rows:
        present.add(r["method"])
        if r["method"] not in (method, reference):
            continue
        value = float(r["metric"]) if row_is_valid(r) else math.nan
        side = mine if r["method"] == method else theirs
        side.setdefault(str(r.get("seed", 0)), {})[_instance_key(r)] = value
    for name in dict.fromkeys((method, reference)):  # a name with no row would pair nothing, silently (NaN)
        if name not in present or method == reference:
            raise UserError(f"cannot pair {method!r} with {reference!r}: " + (
                "a method is paired with another" if method == reference else f"no row of {name!r}") +
                f"; the rows hold {', '.join(sorted(map(str, present))) or 'none'}")
    seeds = tuple(sorted(mine, key=_seed_order))
    instances = sorted({k for per_seed in mine.values() for k in per_seed})
    diff = np.full((len(seeds), len(instances)), math.nan)
    dropped = 0
    if not by_seed and len(theirs) > 1:
        raise BadArgument(f"by_seed: {reference!r} has results for {len(theirs)} seeds, so it was trained: pair it "
                          f"by seed (by_seed=True; CompareResult.paired chooses for you)")
    shared = next(iter(theirs.values()), {})
    for a, seed in enumerate(seeds):
        ref = theirs.get(seed, {}) if by_seed else shared
        for b, key in enumerate(instances):
            if key not in mine[seed]:
                continue
            d = mine[seed][key] - ref.get(key, math.nan)
            if math.isfinite(d):
                diff[a, b] = d
            else:
                dropped += 1
    return Paired(diff, seeds, dropped)


def _seed_order(seed: str):
    return (0, int(seed)) if seed.lstrip("-").isdigit() else (1, seed)


def wilcoxon_p(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (zeros split between the
    signs). All differences zero: p = 1. No pairs: NaN."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan
    if not np.any(d):
        return 1.0
    import scipy.stats  # here, not at the top: half of every command's start (tests/test_architecture.py)
    return float(scipy.stats.wilcoxon(d, zero_method=ZERO_METHOD, alternative="two-sided").pvalue)


def bootstrap_ci(diff: np.ndarray, *, level: float = LEVEL, resamples: int = RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float, str]:
    """Percentile bootstrap interval of the mean difference, and what it resamples.

    ``diff`` is seeds x instances (NaN: dropped pair). With two or more seeds whole seeds are
    drawn with replacement (a cluster bootstrap) and each resample's statistic is the mean
    over the pairs of the seeds drawn; with one seed the instances are resampled instead.
    Returns ``(low, high, "seeds" | "instances")``; NaN bounds without any pair.
    """
    diff = np.atleast_2d(np.asarray(diff, dtype=float))
    valid = np.isfinite(diff)
    sums = np.where(valid, diff, 0.0).sum(axis=1)
    counts = valid.sum(axis=1)
    keep = counts > 0
    sums, counts = sums[keep], counts[keep]
    rng = np.random.default_rng(seed)
    if len(sums) >= 2:
        over = "seeds"
        draw = rng.integers(0, len(sums), size=(resamples, len(sums)))
        means = sums[draw].sum(axis=1) / counts[draw].sum(axis=1)
    else:
        over = "instances"
        values = diff[valid]
        if values.size == 0:
            return math.nan, math.nan, over
        draw = rng.integers(0, values.size, size=(resamples, values.size))
        means = values[draw].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high), over


@dataclass(frozen=True)
class Comparison:
    """One method against one reference over paired (seed, instance) results; lower is better."""

    method: str
    reference: str
    relation: str          # "best baseline" | "plain twin" | ""
    mean: float            # mean of method - reference over the pairs
    low: float             # bootstrap interval of that mean
    high: float
    p: float               # Wilcoxon signed-rank, two-sided
    pairs: int
    seeds: int
    dropped: int
    over: str              # what the interval resamples: "seeds" or "instances"
    alpha: float = ALPHA
    raw_p: float | None = None  # the test's own p when ``p`` is Holm-adjusted within a family (``holm_adjust``)

    @property
    def significant(self) -> bool:
        """The test rejects at ``alpha`` and the interval excludes 0, both."""
        return (not math.isnan(self.p) and self.p < self.alpha
                and (self.low > 0 or self.high < 0))

    @property
    def direction(self) -> str:
        return "better" if self.mean < 0 else "worse" if self.mean > 0 else "equal"

    @property
    def verdict(self) -> str:
        if self.pairs == 0:
            return "no valid pairs"
        if self.mean == 0 and self.p == 1.0 and self.low == 0 and self.high == 0:
            return "no difference (identical results)"
        if self.significant:
            return f"{self.direction}, significant"
        return "no significant difference"

    def mark(self) -> str:
        """'+' significantly better, '−' significantly worse, '' otherwise."""
        if not self.significant:
            return ""
        return "+" if self.mean < 0 else "−"


def compare_paired(rows: Iterable[dict], method: str, reference: str, relation: str = "", *,
                   by_seed: bool = False, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Comparison:
    """Pair the rows (see ``pair_rows``), test them and bound their mean difference."""
    paired = pair_rows(rows, method, reference, by_seed=by_seed)
    values = paired.values
    low, high, over = bootstrap_ci(paired.diff, resamples=resamples, seed=seed)
    seeds_with_pairs = int((np.isfinite(paired.diff).sum(axis=1) > 0).sum()) if paired.diff.size else 0
    return Comparison(method, reference, relation, float(values.mean()) if values.size else math.nan, low, high,
                      wilcoxon_p(values), int(values.size), seeds_with_pairs, paired.dropped, over)


def mean_half_width(per_seed: Iterable[float], level: float = LEVEL) -> float:
    """Half-width of the Student-t interval of a mean over seeds (NaN with fewer than two)."""
    x = np.asarray(list(per_seed), dtype=float)
    if x.size < 2:
        return math.nan
    import scipy.stats  # here, not at the top: half of every command's start (tests/test_architecture.py)
    t = scipy.stats.t.ppf(0.5 + level / 2.0, df=x.size - 1)
    return float(t * x.std(ddof=1) / math.sqrt(x.size))


def format_p(p: float, alpha: float = ALPHA, digits: int = 3) -> str:
    """``p`` as tables and reports print it, on the same side of ``alpha`` as the test decided.

    ``"< 0.001"`` below 0.001; else ``digits`` decimals and as many more as it takes for the
    printed value to fall on the side of ``alpha`` that ``p`` is on, and not to equal ``alpha``
    unless ``p`` does: 0.04994 prints as ``"0.0499"`` (never ``"0.050"`` beside a significant
    verdict), 0.0501 as ``"0.0501"``, 0.05 as ``"0.050"``. ``"—"`` for NaN (no pairs).
    """
    if math.isnan(p):
        return "—"
    if p < 0.001:
        return "< 0.001"
    for d in range(digits, 13):
        text = f"{p:.{d}f}"
        shown = float(text)
        if (shown < alpha) == (p < alpha) and (shown != alpha or p == alpha):
            return text
    return f"< {alpha:g}" if p < alpha else repr(p)


def format_signed(x: float, digits: int = 3) -> str:
    """``x`` with its sign (a true minus sign) and ``digits`` decimals, more when a nonzero value
    would print as zero: an interval bound of +0.0004 prints as ``"+0.0004"``, so an interval
    called significant never shows a bound of 0; zero itself has no sign (``"0.000"``: a bound a
    reader takes for positive would hide that the interval includes 0). ``"—"`` for NaN."""
    if math.isnan(x):
        return "—"
    if x == 0:
        return f"{0.0:.{digits}f}"
    d = digits
    while d < 12 and x != 0 and float(f"{x:.{d}f}") == 0:
        d += 1
    return f"{x:+.{d}f}".replace("-", "−")


def holm(pvalues: Iterable[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values, in their order: the i-th smallest of m
    is multiplied by m - i (i from 0), each kept at least the one before it and at most 1. NaN (no
    test) stays NaN and does not count in m. Rejecting where the adjusted p < alpha keeps the chance
    of any false rejection in the family at most alpha."""
    p = [float(x) for x in pvalues]
    tested = sorted((x, i) for i, x in enumerate(p) if not math.isnan(x))
    out, running = list(p), 0.0
    for rank, (value, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * value))
        out[i] = running
    return out


def holm_adjust(tests: dict) -> dict:
    """``tests`` (any key -> ``Comparison``, one family) with every p Holm-adjusted (``holm``), the
    test's own p kept in ``raw_p``."""
    keys = list(tests)
    adjusted = holm(tests[k].p for k in keys)
    return {k: replace(tests[k], p=a, raw_p=tests[k].p) for k, a in zip(keys, adjusted)}
