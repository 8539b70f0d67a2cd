"""An OBP heuristic specialised to the nominal Weibull item sizes (a FunSearch-style priority).

The score is the one FunSearch evolved for Weibull bin packing (Romera-Paredes et
al., Nature 2024), computed with sizes in units of C / 50 (the heuristic always
sees the still-empty bins, so ``bins.max()`` is the capacity C). On the nominal set
(Weibull(3, 45), n = 5000, C = 200) it wastes about 0.56 % against BestFit's 1.55 %,
and it degrades sharply once the item sizes shift (about 5.6 % on uniform sizes).
"""
import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    unit = bins.max() / 50.0
    bins = bins / unit
    item = item / unit
    score = (bins - bins.max()) ** 2 / item
    score += bins ** 2 / item ** 2
    score += bins ** 2 / item ** 3
    score[bins > item] = -score[bins > item]
    score[1:] -= score[:-1]
    return score
