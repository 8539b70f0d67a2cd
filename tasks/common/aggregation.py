"""Aggregations A over per-instance evaluations (eval = -metric, larger is better)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Aggregation"]

_KINDS = ("mean", "min", "cvar", "balanced")


@dataclass(frozen=True)
class Aggregation:
    """``mean`` (paper default), ``min`` (worst case), ``cvar:ALPHA`` (mean of the worst ALPHA
    share) or ``balanced[:W]`` (``(1 - W)`` x the nominal mean + ``W`` x the adversarial mean),
    each over ``-metric``; ``regret:`` before any of them aggregates ``-(metric - reference)``
    instead, the reference being the best classical baseline's metric on the same instance
    (``regret:min`` is minimax regret: a program scores 0 when it is never worse than the best
    rule, below 0 by its worst loss to it), or one named baseline's (``regret:NAME:min``, e.g.
    ``regret:bestfit:min``; ``reference`` holds the name, lower case). Under ``mean`` and
    ``balanced`` the regret only shifts every program by the same amount per instance, so it
    ranks programs as the metric does; under ``min`` and ``cvar`` it does not. Against the best
    rule per instance every rule has a floor (it loses to the other rules where they win);
    against one rule that rule scores exactly 0 everywhere.

    ``balanced`` needs to know which evaluations are nominal: the set keeps its nominal
    instances first, and ``nominal`` (their count) is passed with the evaluations. With
    no adversarial instance yet it is the nominal mean. Under ``mean`` five nominal
    instances outvote one adversarial instance five to one; under ``balanced`` (W = 0.5)
    the adversarial instances weigh as much as the whole nominal set, however few.
    """

    kind: str = "mean"
    alpha: float = 1.0
    weight: float = 0.5
    regret: bool = False
    reference: str | None = None

    @classmethod
    def parse(cls, spec: "str | Aggregation") -> "Aggregation":
        if isinstance(spec, Aggregation):
            return spec
        text = str(spec).strip().lower()
        if text.startswith("regret:"):
            rest, reference = text[len("regret:"):], None
            head, _, tail = rest.partition(":")
            if head and head not in _KINDS and head != "regret":
                reference, rest = head, tail
            try:
                inner = cls.parse(rest)
                if inner.regret:
                    raise ValueError(spec)
            except ValueError:
                raise ValueError(f"aggregation {spec!r}: use regret:[NAME:]mean, regret:[NAME:]min, "
                                 f"regret:[NAME:]cvar:ALPHA or regret:[NAME:]balanced[:W] (NAME: one classical "
                                 f"baseline of the task)") from None
            return cls(inner.kind, inner.alpha, inner.weight, regret=True, reference=reference)
        if text in ("mean", "min", "balanced"):
            return cls(text)
        head, _, tail = text.partition(":")
        if head in ("cvar", "balanced") and tail:
            try:
                value = float(tail)
            except ValueError:
                value = float("nan")
            if head == "cvar":
                if not 0 < value <= 1:
                    raise ValueError(f"aggregation {spec!r}: cvar alpha must be in (0, 1]")
                return cls("cvar", alpha=value)
            if not 0 <= value <= 1:
                raise ValueError(f"aggregation {spec!r}: the balanced weight W must be in [0, 1]")
            return cls("balanced", weight=value)
        raise ValueError(f"aggregation {spec!r}: use mean, min, cvar:ALPHA or balanced[:W], "
                         f"each optionally after regret:")

    def __call__(self, evals, nominal: int | None = None) -> float:
        """A over ``evals``; ``nominal``: how many leading evaluations are nominal (``balanced`` only)."""
        e = np.asarray(evals, dtype=float)
        if e.size == 0:
            raise ValueError("cannot aggregate an empty set of evaluations")
        if self.kind == "mean":
            return float(e.mean())
        if self.kind == "min":
            return float(e.min())
        if self.kind == "balanced":
            n = e.size if nominal is None else min(int(nominal), e.size)
            if n <= 0 or n == e.size:
                return float(e.mean())
            return float((1.0 - self.weight) * e[:n].mean() + self.weight * e[n:].mean())
        worst = np.sort(e)[: max(1, math.ceil(self.alpha * e.size))]
        return float(worst.mean())

    @property
    def bounded(self) -> bool:
        """Whether part of the set bounds the score from above (``upper_bound``): ``min`` and
        ``cvar`` (and their ``regret:`` forms) do; ``mean`` and ``balanced`` do not (an instance
        not yet met can raise the score without limit)."""
        return self.kind in ("min", "cvar")

    def upper_bound(self, evals, total: int) -> float:
        """The largest value A can take over ``total`` evaluations of which ``evals`` are known
        (any of their positions): ``min`` of the known ones; under ``cvar:ALPHA``, once at least
        m = ceil(ALPHA x total) are known, the mean of their m worst (the unknown ones can only
        lower it); ``+inf`` otherwise. It is computed with the operations ``__call__`` uses, and
        those are monotone in every evaluation, so it holds in floating point: the full score
        is never above it."""
        e = np.asarray(evals, dtype=float)
        if e.size == 0 or not self.bounded:
            return math.inf
        if self.kind == "min":
            return float(e.min())
        m = max(1, math.ceil(self.alpha * int(total)))
        if e.size < m:
            return math.inf
        return float(np.sort(e)[:m].mean())

    def describe(self, metric: str = "metric") -> str:
        """What minus the aggregated score is, in words: ``"mean waste ratio (%)"``, ``"worst ..."``,
        ``"... regret against BestFit"`` (``metric``: the task's name for its metric, with unit)."""
        what = f"{metric} regret" if self.regret else metric
        if self.kind == "mean":
            text = f"mean {what}"
        elif self.kind == "min":
            text = f"worst {what}"
        elif self.kind == "cvar":
            text = f"mean {what} over the worst {100 * self.alpha:g} % of instances"
        else:
            text = f"{what}: nominal and adversarial means weighted {1 - self.weight:g} and {self.weight:g}"
        if self.regret:
            text += f" against {self.reference}" if self.reference else " against the best baseline per instance"
        return text

    def __str__(self) -> str:
        text = self.kind
        if self.kind == "cvar":
            text = f"cvar:{self.alpha:g}"
        if self.kind == "balanced":
            text = f"balanced:{self.weight:g}"
        if not self.regret:
            return text
        return f"regret:{self.reference}:{text}" if self.reference else f"regret:{text}"
