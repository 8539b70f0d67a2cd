"""An OBP heuristic that loses to BestFit only where small items are common.

BestFit, except that items under C / 20 go to the emptiest bin already opened. Good on
the nominal Weibull sizes (few small items), poor when small items become common;
instances that are hard for every packer do not hurt it more than BestFit, so it tells
a regret adversary from a metric adversary (``benchmarks/adversary_regret.py``).
"""
import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    capacity = bins.max()
    if item < capacity / 20:
        scores = bins.astype(float)
        scores[bins == capacity] = -1.0
        return scores
    return -bins
