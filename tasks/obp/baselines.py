"""Classical OBP baselines as priority functions (argmax wins, first index on ties)."""
from __future__ import annotations

import numpy as np

from .sum_of_squares import harmonic, sum_of_squares


def best_fit(item: float, bins: np.ndarray) -> np.ndarray:
    """BestFit: the feasible bin with the least remaining capacity."""
    return -bins


def first_fit(item: float, bins: np.ndarray) -> np.ndarray:
    """FirstFit: the first feasible bin in creation order (all scores equal)."""
    return np.zeros(len(bins))


# the paper's rules: the task's ``baselines`` (the adversary's references, regret:baselines, GP's probe)
BASELINES = {"BestFit": best_fit, "FirstFit": first_fit}
# every classical rule of the task, the paper's first: the rows of the tables, the "best classical" candidates
CLASSICAL_RULES = {**BASELINES, "SumOfSquares": sum_of_squares, "Harmonic-10": harmonic}
