"""The shift dimension: one integer quantity whose distribution can move.

A distribution over the quantity is a probability vector ``p`` of length ``K``
over equal-width cells of the normalised value. Cells partition the integer
range ``[low, high]``: the integer ``v`` lies in cell
``floor(K * (v - low) / (high - low + 1))``. Sampling from ``p`` picks a cell by
``p`` and then an integer uniformly inside it, so an instance's histogram and
the distribution it was drawn from live on the same grid. (When the range holds
fewer integers than cells, empty cells carry no mass and ``p`` is renormalised
over the others.)
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["ShiftDimension", "is_distribution"]


@dataclass(frozen=True)
class ShiftDimension:
    """A 1-D integer quantity in ``[low, high]`` binned into ``cells`` (K) cells."""

    name: str
    cells: int
    low: int = 1

    def __post_init__(self):
        for field in ("cells", "low"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{field} must be a whole number, got {value!r}")
        if self.cells < 1:
            raise ValueError(f"cells must be >= 1, got {self.cells}")

    def cell_of(self, values: np.ndarray, high: int) -> np.ndarray:
        """Cell index of every value (values outside the range are clipped into it)."""
        v = np.clip(np.asarray(values, dtype=np.int64), self.low, high)
        return (self.cells * (v - self.low)) // (high - self.low + 1)

    def histogram(self, values: np.ndarray, high: int) -> np.ndarray:
        """Empirical distribution ``p`` of ``values`` over the K cells (sums to 1)."""
        counts = np.bincount(self.cell_of(values, high), minlength=self.cells).astype(float)
        total = counts.sum()
        if total == 0:
            raise ValueError("cannot take the histogram of an empty instance")
        return counts / total

    def value_probabilities(self, p: np.ndarray, high: int) -> tuple[np.ndarray, np.ndarray]:
        """Each integer in ``[low, high]`` with its probability under ``p`` (a probability vector: finite,
        non-negative, summing to 1, else a ``ValueError`` saying which)."""
        p = _check_distribution(p, self.cells)
        values, cells, sizes = _grid(self.low, int(high), self.cells)
        probs = p[cells] / sizes[cells]
        total = probs.sum()
        if total <= 0:
            raise ValueError("the distribution puts no mass on any integer of the range")
        return values, probs / total

    def occupied(self, high: int) -> np.ndarray:
        """Which of the K cells hold at least one integer of ``[low, high]`` (the others carry no mass)."""
        return _grid(self.low, int(high), self.cells)[2] > 0

    def sample(self, p: np.ndarray, size: int, rng: np.random.Generator, high: int) -> np.ndarray:
        """``size`` integers drawn from ``p`` (cell by ``p``, then uniform within the cell)."""
        values, probs = self.value_probabilities(p, high)
        return rng.choice(values, size=int(size), p=probs)


@lru_cache(maxsize=64)
def _grid(low: int, high: int, cells: int):
    values = np.arange(low, high + 1, dtype=np.int64)
    cell = (cells * (values - low)) // (high - low + 1)
    sizes = np.bincount(cell, minlength=cells)
    values.setflags(write=False)
    cell.setflags(write=False)
    sizes.setflags(write=False)
    return values, cell, sizes


def is_distribution(p: np.ndarray, atol: float = 1e-9) -> bool:
    """True when ``p`` is a finite, non-negative vector summing to 1."""
    p = np.asarray(p, dtype=float)
    return bool(p.ndim == 1 and np.all(np.isfinite(p)) and np.all(p >= -atol)
                and abs(p.sum() - 1.0) <= atol * max(1, p.size))


def _check_distribution(p, cells: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    if p.shape != (cells,):
        raise ValueError(f"distribution must have shape ({cells},), got {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("distribution must be finite and non-negative")
    if abs(p.sum() - 1.0) > 1e-6:  # rounding aside: a vector of counts or weights is not taken for one
        raise ValueError(f"distribution must sum to 1, got a sum of {p.sum():.6g} (divide it by its sum)")
    return p
