"""Aggregations A over per-instance evaluations (eval = -metric, larger is better)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Aggregation"]


@dataclass(frozen=True)
class Aggregation:
    """``mean`` (paper default), ``min`` (worst case) or ``cvar:ALPHA`` (mean of the worst ALPHA share)."""

    kind: str = "mean"
    alpha: float = 1.0

    @classmethod
    def parse(cls, spec: "str | Aggregation") -> "Aggregation":
        if isinstance(spec, Aggregation):
            return spec
        text = str(spec).strip().lower()
        if text in ("mean", "min"):
            return cls(text)
        if text.startswith("cvar:"):
            try:
                alpha = float(text.split(":", 1)[1])
            except ValueError:
                alpha = float("nan")
            if not 0 < alpha <= 1:
                raise ValueError(f"aggregation {spec!r}: cvar alpha must be in (0, 1]")
            return cls("cvar", alpha)
        raise ValueError(f"aggregation {spec!r}: use mean, min or cvar:ALPHA")

    def __call__(self, evals) -> float:
        e = np.asarray(evals, dtype=float)
        if e.size == 0:
            raise ValueError("cannot aggregate an empty set of evaluations")
        if self.kind == "mean":
            return float(e.mean())
        if self.kind == "min":
            return float(e.min())
        worst = np.sort(e)[: max(1, math.ceil(self.alpha * e.size))]
        return float(worst.mean())

    def __str__(self) -> str:
        return f"cvar:{self.alpha:g}" if self.kind == "cvar" else self.kind
