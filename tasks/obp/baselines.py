"""Classical OBP baselines as priority functions (argmax wins, first index on ties)."""
from __future__ import annotations

import numpy as np


def best_fit(item: float, bins: np.ndarray) -> np.ndarray:
    """BestFit: the feasible bin with the least remaining capacity."""
    return -bins


def first_fit(item: float, bins: np.ndarray) -> np.ndarray:
    """FirstFit: the first feasible bin in creation order (all scores equal)."""
    return np.zeros(len(bins))


BASELINES = {"BestFit": best_fit, "FirstFit": first_fit}
