"""The families of shifted data, as continuous draws rounded and clipped to ``[1, high]``.

``FAMILIES`` are the five test families (the paper's); ``VALIDATION_FAMILIES`` are five
others, disjoint from them and from every nominal set, for every choice a study makes
(settings, defaults, a final selection) and for EoH-S's diverse training set. The test
families are for the final report only.
"""
from __future__ import annotations

import numpy as np

__all__ = ["FAMILIES", "VALIDATION_FAMILIES", "sample_family"]

FAMILIES = ("uniform", "normal", "lognormal", "exponential", "triangular")
VALIDATION_FAMILIES = ("beta", "gamma", "weibull", "bimodal", "poisson")


def sample_family(family: str, size: int, high: int, rng: np.random.Generator, *,
                  lognormal_median: float = 0.25, lognormal_sigma: float = 0.6) -> np.ndarray:
    """Draw ``size`` integers of one family with maximum ``high`` (C or D_max).

    Uniform U(1, high); Normal(0.5 high, 0.2 high); LogNormal(ln(m high), s) with
    m = ``lognormal_median`` and s = ``lognormal_sigma``; Exponential(scale 0.3 high) + 1;
    Triangular(1, max(1, 0.35 high), high) (every value 1 where ``high`` is 1).
    """
    h = float(high)
    if family == "uniform":
        x = rng.uniform(1.0, h, size)
    elif family == "normal":
        x = rng.normal(0.5 * h, 0.2 * h, size)
    elif family == "lognormal":
        x = rng.lognormal(np.log(lognormal_median * h), lognormal_sigma, size)
    elif family == "exponential":
        x = rng.exponential(0.3 * h, size) + 1.0
    elif family == "triangular":  # the mode held within [1, high], so a range of one or two integers draws too
        x = rng.triangular(1.0, max(1.0, 0.35 * h), h, size) if h > 1 else np.ones(size)
    elif family == "beta":
        x = 1.0 + (h - 1.0) * rng.beta(2.0, 5.0, size)
    elif family == "gamma":
        x = rng.gamma(2.0, 0.12 * h, size) + 1.0
    elif family == "weibull":
        x = rng.weibull(1.5, size) * 0.35 * h
    elif family == "bimodal":
        low = rng.random(size) < 0.5
        x = np.where(low, rng.normal(0.2 * h, 0.06 * h, size), rng.normal(0.65 * h, 0.1 * h, size))
    elif family == "poisson":
        rate = np.where(rng.random(size) < 0.6, 0.15 * h, 0.45 * h)
        x = 1.0 + rng.poisson(rate).astype(float)
    else:
        raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILIES + VALIDATION_FAMILIES)}")
    return np.clip(np.round(x), 1, high).astype(np.int64)
