"""Gene decoding: 18 genes -> the nine basis distributions -> the mixture p_adv and the instance length.

Every distribution here is a probability vector over the task's ``K`` equal-width
cells of the normalised shift value ``q`` in [0, 1] (cell ``j`` is
``[j / K, (j + 1) / K)``). Each basis is a continuous density on [0, 1] rendered by
**integrating it over every cell** (differences of its CDF at the cell edges), so a
basis keeps its shape at any ``K`` and a narrow spike still carries its mass when
it falls between cell centres. Densities that reach beyond [0, 1] (Gaussian,
Peak, Poisson-like) are truncated to [0, 1] and renormalised.

Gene layout (0-based indices; the paper numbers them g1..g18):

===========  =====================================================================
``g[0:9]``   signed weights ``w_i = g_i - 0.5`` of the nine bases, in ``BASES`` order
``g[9]``     Small: Beta(1, 1 + 4 g)                      (mean falls as g grows)
``g[10]``    Large: Beta(1 + 4 g, 1)                      (mean rises as g grows)
``g[11]``    Gaussian mean ``mu = g``
``g[12]``    Gaussian std ``sigma = 0.1 + 0.3 g``
``g[13]``    Periodic frequency ``f = 1 + (f_max - 1) g`` cycles over [0, 1]
``g[14]``    Poisson-like rate ``lambda = 1 + 9 g``
``g[15]``    Peak position ``c = g``
``g[16]``    Peak half-width ``s = 0.005 + 0.095 g``
``g[17]``    length factor ``0.9 + 0.2 g`` of the nominal length
===========  =====================================================================

The fixed bases: Uniform U(0, 1); Center Triangular(0, 0.5, 1); Bimodal, the equal
mixture of U(0, 0.3) and U(0.7, 1).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["GENES", "BASES", "WEIGHTS", "LENGTH_GENE", "POISSON_SCALE", "PERIODIC_MAX_FREQUENCY",
           "weights", "basis", "bases", "mixture", "flat_mixture", "instance_length"]

GENES = 18
BASES = ("uniform", "small", "large", "center", "bimodal", "gaussian", "periodic", "poisson", "peak")
WEIGHTS = slice(0, 9)
LENGTH_GENE = 17
# Poisson count k is spread uniformly over [k / 20, (k + 1) / 20): at the largest rate
# (10) the mean sits near q = 0.5, at the smallest (1) near q = 0.08.
POISSON_SCALE = 20
# At most 10 cycles over [0, 1], and never fewer than four cells per cycle.
PERIODIC_MAX_FREQUENCY = 10.0


@lru_cache(maxsize=32)
def _edges(cells: int) -> np.ndarray:
    edges = np.linspace(0.0, 1.0, cells + 1)
    edges.setflags(write=False)
    return edges


def _from_cdf(cdf, cells: int) -> np.ndarray:
    """Cell masses of the density whose CDF on [0, 1] is ``cdf``, renormalised over [0, 1]."""
    values = cdf(_edges(cells))
    mass = np.clip(np.diff(values), 0.0, None)
    return mass / mass.sum()


def _uniform(cells: int) -> np.ndarray:
    return np.full(cells, 1.0 / cells)


def _small(g: float, cells: int) -> np.ndarray:
    b = 1.0 + 4.0 * g  # Beta(1, b): CDF 1 - (1 - x)^b
    return _from_cdf(lambda x: 1.0 - (1.0 - x) ** b, cells)


def _large(g: float, cells: int) -> np.ndarray:
    a = 1.0 + 4.0 * g  # Beta(a, 1): CDF x^a
    return _from_cdf(lambda x: x ** a, cells)


def _center(cells: int) -> np.ndarray:
    return _from_cdf(lambda x: np.where(x <= 0.5, 2.0 * x * x, 1.0 - 2.0 * (1.0 - x) ** 2), cells)


def _bimodal(cells: int) -> np.ndarray:
    return _from_cdf(lambda x: 0.5 * np.clip(x / 0.3, 0, 1) + 0.5 * np.clip((x - 0.7) / 0.3, 0, 1), cells)


def _gaussian(mu_gene: float, sigma_gene: float, cells: int) -> np.ndarray:
    from scipy.special import ndtr  # here, not at the top: a worker's spawner, forked before its
    # inner search runs, then holds none of scipy's pages, and each program's process it forks copies none
    mu, sigma = mu_gene, 0.1 + 0.3 * sigma_gene
    return _from_cdf(lambda x: ndtr((x - mu) / sigma), cells)


def _periodic_frequency(g: float, cells: int) -> float:
    f_max = max(1.0, min(PERIODIC_MAX_FREQUENCY, cells / 4.0))
    return 1.0 + (f_max - 1.0) * g


def _periodic(g: float, cells: int) -> np.ndarray:
    # density 1 + sin(2 pi f q) (never negative), integrated exactly over each cell
    f = _periodic_frequency(g, cells)
    w = 2.0 * np.pi * f
    return _from_cdf(lambda x: x + (1.0 - np.cos(w * x)) / w, cells)


def _poisson(g: float, cells: int) -> np.ndarray:
    from scipy.special import pdtr  # here, not at the top: as ndtr above
    lam = 1.0 + 9.0 * g

    def cdf(x):
        scaled = POISSON_SCALE * np.asarray(x)
        k = np.floor(scaled)
        below = np.where(k > 0, pdtr(np.maximum(k - 1, 0), lam), 0.0)  # P(N <= k - 1)
        pmf = pdtr(k, lam) - below
        return below + (scaled - k) * pmf

    return _from_cdf(cdf, cells)


def _peak(position: float, spread: float, cells: int) -> np.ndarray:
    c, s = position, 0.005 + 0.095 * spread

    def cdf(x):  # triangular kernel of half-width s centred at c
        z = np.clip((np.asarray(x) - c) / s, -1.0, 1.0)
        return np.where(z <= 0, 0.5 * (1 + z) ** 2, 1.0 - 0.5 * (1 - z) ** 2)

    return _from_cdf(cdf, cells)


def _check_genes(genes, length: int | None = None) -> np.ndarray:
    genes = np.asarray(genes, dtype=float)
    if genes.ndim != 1 or (length is not None and genes.size != length):
        raise ValueError(f"expected a gene vector of length {length}, got shape {genes.shape}")
    if not np.all(np.isfinite(genes)) or np.any(genes < 0) or np.any(genes > 1):
        raise ValueError("genes must lie in [0, 1]")
    return genes


def weights(genes) -> np.ndarray:
    """The signed mixture weights ``w_i = g_i - 0.5`` of the nine bases."""
    return _check_genes(genes, GENES)[WEIGHTS] - 0.5


def basis(name: str, genes, cells: int) -> np.ndarray:
    """One basis distribution ``phi_i(g)`` as a probability vector over ``cells`` cells."""
    g = _check_genes(genes, GENES)
    if name == "uniform":
        return _uniform(cells)
    if name == "small":
        return _small(g[9], cells)
    if name == "large":
        return _large(g[10], cells)
    if name == "center":
        return _center(cells)
    if name == "bimodal":
        return _bimodal(cells)
    if name == "gaussian":
        return _gaussian(g[11], g[12], cells)
    if name == "periodic":
        return _periodic(g[13], cells)
    if name == "poisson":
        return _poisson(g[14], cells)
    if name == "peak":
        return _peak(g[15], g[16], cells)
    raise ValueError(f"unknown basis {name!r}; choose from {', '.join(BASES)}")


def bases(genes, cells: int) -> np.ndarray:
    """All nine bases, shape ``(9, cells)``, rows in ``BASES`` order."""
    return np.stack([basis(name, genes, cells) for name in BASES])


def _renormalise(raw: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    p = np.clip(raw, 0.0, 1.0)
    total = p.sum()
    # every cell clipped to zero (all weights strongly negative): no usable shape, no shift
    return fallback.copy() if total <= 0 else p / total


def _weighted_sum(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``sum_i w_i rows_i``, added row by row in ``BASES`` order. Not ``w @ rows``: a
    matrix product goes through BLAS, whose kernel (chosen by CPU: SkylakeX, Haswell, Zen)
    orders and fuses the additions differently, so the same genes would give distributions an
    ulp apart, and runs that differ, from one machine to the next."""
    total = np.zeros(rows.shape[1])
    for weight, row in zip(w, rows):
        total += weight * row
    return total


def mixture(genes, p_bar: np.ndarray | None, cells: int) -> np.ndarray:
    """``p_adv = clip(p_bar + sum_i w_i phi_i, 0, 1)`` renormalised (Eq. adv_dist).

    With ``p_bar=None`` (the unconstrained adversary) the mixture of the bases alone,
    ``clip(sum_i w_i phi_i, 0, 1)`` renormalised. When clipping leaves no mass the
    result is ``p_bar`` (or the uniform distribution without an anchor).
    """
    shift = _weighted_sum(weights(genes), bases(genes, cells))
    if p_bar is None:
        return _renormalise(shift, _uniform(cells))
    p_bar = np.asarray(p_bar, dtype=float)
    return _renormalise(p_bar + shift, p_bar)


def flat_mixture(genes, p_bar: np.ndarray | None, cells: int) -> np.ndarray:
    """The flat encoding: ``cells`` genes perturb the cells directly (the length gene follows).

    Anchored: ``clip(p_bar + (2 / K) (g_j - 0.5), 0, 1)`` renormalised, so every cell moves
    by at most the uniform cell mass ``1 / K`` (about the reach of the basis mixture).
    Unanchored (``p_bar=None``): ``p_j`` proportional to ``g_j``.
    """
    g = _check_genes(genes, cells + 1)[:cells]
    if p_bar is None:
        return _renormalise(g, _uniform(cells))
    p_bar = np.asarray(p_bar, dtype=float)
    return _renormalise(p_bar + (2.0 / cells) * (g - 0.5), p_bar)


def instance_length(length_gene: float, nominal_length: int, can_change: bool = True) -> int:
    """``round(nominal_length * (0.9 + 0.2 g))`` (at least 1), or the nominal length if fixed."""
    if not can_change:
        return int(nominal_length)
    if not 0.0 <= float(length_gene) <= 1.0:
        raise ValueError(f"the length gene must lie in [0, 1], got {length_gene}")
    return max(1, int(round(nominal_length * (0.9 + 0.2 * float(length_gene)))))
