"""The distance d and the radial projection onto the eps-ball of the nearest nominal histogram.

``d(a, b) = mean_j |a_j - b_j|`` over the K cells. The ball B_eps(S) is the union of
the balls of radius ``epsilon`` (eps) around the nominal histograms.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raise_plugin.settings import PROJECTIONS

__all__ = ["PROJECTIONS", "Projection", "distance", "distances", "nearest", "project", "largest_reachable_distance",
           "reachable_epsilon"]

_BISECTION_STEPS = 80
_MAX_DOUBLINGS = 60
# displacements shorter than this (in d) are rounding noise: they give no direction to extend
_NO_DIRECTION = 1e-13


def distance(a, b) -> float:
    """``d(a, b) = mean_j |a_j - b_j|``."""
    return float(np.mean(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def distances(p, histograms: np.ndarray) -> np.ndarray:
    """``d(p, h)`` for every row ``h`` of ``histograms``."""
    return np.mean(np.abs(np.asarray(histograms, dtype=float) - np.asarray(p, dtype=float)), axis=1)


def nearest(p, histograms: np.ndarray) -> tuple[int, float]:
    """Index of the nominal histogram nearest to ``p`` (first on ties) and its distance."""
    d = distances(p, histograms)
    index = int(np.argmin(d))
    return index, float(d[index])


def largest_reachable_distance(histograms: np.ndarray, occupied: np.ndarray | None = None) -> float:
    """An upper bound on the distance from the nominal histograms that any distribution reaches:
    ``min_b max_p d(p, b) = min_b 2 (1 - min_j b_j) / K`` (the farthest point from ``b`` is
    the vertex of its emptiest cell), so no eps above it is ever reached. ``occupied``: the cells a
    distribution may hold mass in (all by default); ``j`` runs over them."""
    histograms = np.atleast_2d(np.asarray(histograms, dtype=float))
    cells = histograms.shape[1]
    kept = histograms if occupied is None else histograms[:, np.asarray(occupied, dtype=bool)]
    return float(np.min(2.0 * (1.0 - kept.min(axis=1)) / cells))


def reachable_epsilon(task) -> float:
    """``largest_reachable_distance`` of ``task``'s nominal histograms over the cells that hold an integer
    of its range (``ShiftDimension.occupied``). With m such cells every bound lies in
    [2 (1 - 1/m) / K, 2 / K]: below that range the histograms are not needed."""
    return largest_reachable_distance(np.stack([task.histogram(s) for s in task.nominal_instances()]),
                                      _occupied(task))


def _occupied(task) -> np.ndarray:
    return np.asarray(task.shift.occupied(task.high_of(dict(task.nominal_params))), dtype=bool)


def check_epsilon(task, epsilon: float) -> str | None:
    """Why ``epsilon`` can never be reached (beyond the largest distance ``task``'s distributions can
    reach from its nominal histograms), else None."""
    cells, held = int(task.shift.cells), int(_occupied(task).sum())
    if epsilon <= 2.0 * (1.0 - 1.0 / held) / cells:
        return None
    reach = reachable_epsilon(task)
    if epsilon <= reach:
        return None
    digits = 4  # as many as tell the two apart: 0.1880001 is beyond 0.188, not "0.188 beyond 0.188"
    while f"{epsilon:.{digits}g}" == f"{reach:.{digits}g}":
        digits += 1
    return (f"{epsilon:.{max(digits, 6)}g} is beyond the largest distance {task.name}'s distributions can reach from "
            f"its nominal histograms ({reach:.{digits}g})")


@dataclass(frozen=True)
class Projection:
    """A projected distribution with its nearest nominal histogram ``b``.

    ``raw_distance`` is ``d(p_adv, b)`` before projection, ``distance`` is
    ``d(p_proj, b)`` after it.
    """

    distribution: np.ndarray
    nearest: int
    distance: float
    raw_distance: float


def project(p_adv, histograms: np.ndarray, epsilon: float, mode: str = "paper") -> Projection:
    """Map ``p_adv`` into the eps-ball of its nearest nominal histogram ``b``.

    ``"paper"``: ``p_proj = b + eps / max(eps, d(p_adv, b)) * (p_adv - b)``; a point
    outside the ball moves radially onto its boundary, a point inside stays put.
    ``"sphere"``: the displacement is always rescaled to length eps. Outside the ball
    this is the paper's formula. Inside, the ray from ``b`` through ``p_adv`` is
    extended; if it would leave the probability simplex before reaching the sphere,
    it is followed clipped to the simplex (negative cells set to 0, renormalised)
    until it reaches distance eps. Only if even the end of that clipped ray is inside
    the ball is the result short of the sphere, and a ``p_adv`` equal to ``b`` (up to
    rounding, ``d <= 1e-13``) has no direction and is returned unchanged.
    ``"none"``: ``p_adv`` unchanged (its nearest histogram and distance still reported).

    Every result is a convex combination of two probability vectors, hence itself one.
    """
    if mode not in PROJECTIONS:
        raise ValueError(f"unknown projection {mode!r}; choose from {', '.join(PROJECTIONS)}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    p_adv = np.asarray(p_adv, dtype=float)
    histograms = np.asarray(histograms, dtype=float)
    index, d = nearest(p_adv, histograms)
    b = histograms[index]
    if mode == "none" or (mode == "paper" and d <= epsilon) or d <= _NO_DIRECTION:
        p = p_adv.copy()
    elif d >= epsilon:
        p = _toward(b, p_adv, epsilon / d)
    else:
        p = _extend_to_sphere(b, p_adv, epsilon)
    return Projection(p, index, distance(p, b), d)


def _toward(b: np.ndarray, target: np.ndarray, t: float) -> np.ndarray:
    """``(1 - t) b + t target`` for ``t`` in [0, 1]: a probability vector when both ends are."""
    p = np.clip(b + t * (target - b), 0.0, None)
    return p / p.sum()


def _clipped_ray(b: np.ndarray, delta: np.ndarray, t: float) -> np.ndarray:
    p = np.clip(b + t * delta, 0.0, None)
    return p / p.sum()


def _extend_to_sphere(b: np.ndarray, p_adv: np.ndarray, epsilon: float) -> np.ndarray:
    delta = p_adv - b
    t = epsilon / distance(p_adv, b)
    # find a point of the (clipped) ray at distance >= eps; while the plain ray stays in the
    # simplex the first try already is one
    lo, hi = 1.0, t
    far = _clipped_ray(b, delta, hi)
    leaves_simplex = (b + hi * delta).min() < 0.0
    doublings = 0
    while distance(far, b) < epsilon and doublings < _MAX_DOUBLINGS:
        lo, hi = hi, 2.0 * hi
        far = _clipped_ray(b, delta, hi)
        leaves_simplex = True
        doublings += 1
    if distance(far, b) < epsilon:  # even the end of the clipped ray is inside: go as far as it goes
        return far
    if leaves_simplex:
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            point = _clipped_ray(b, delta, mid)
            if distance(point, b) >= epsilon:
                hi, far = mid, point
            else:
                lo = mid
    # far is a probability vector at distance >= eps; the segment from b to it is linear in d,
    # so shrinking toward b lands exactly on the sphere (also when rounding left delta not
    # summing to zero)
    return _toward(b, far, epsilon / distance(far, b))
