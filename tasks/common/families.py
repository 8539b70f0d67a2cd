"""The five shifted test families, as continuous draws rounded and clipped to ``[1, high]``."""
from __future__ import annotations

import numpy as np

__all__ = ["FAMILIES", "sample_family"]

FAMILIES = ("uniform", "normal", "lognormal", "exponential", "triangular")


def sample_family(family: str, size: int, high: int, rng: np.random.Generator, *,
                  lognormal_median: float = 0.25, lognormal_sigma: float = 0.6) -> np.ndarray:
    """Draw ``size`` integers of one family with maximum ``high`` (C or D_max).

    Uniform U(1, high); Normal(0.5 high, 0.2 high); LogNormal(ln(m high), s) with
    m = ``lognormal_median`` and s = ``lognormal_sigma``; Exponential(scale 0.3 high) + 1;
    Triangular(1, 0.35 high, high).
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
    elif family == "triangular":
        x = rng.triangular(1.0, 0.35 * h, h, size)
    else:
        raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    return np.clip(np.round(x), 1, high).astype(np.int64)
