"""Why a heuristic's score is invalid."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["HeuristicError", "check_priorities"]


class HeuristicError(Exception):
    """The heuristic failed on an instance; the message is the one-line reason."""


def check_priorities(priorities, expected: int) -> int:
    """Index of the chosen (largest, first on ties) priority, or ``HeuristicError``.

    The scores must convert to a numeric array of shape ``(expected,)``. NaN anywhere,
    ``+inf`` anywhere, or every score ``-inf`` make the choice undefined and are errors;
    ``-inf`` on some entries is allowed (a common way to rule candidates out).
    """
    if type(priorities) is not np.ndarray:
        try:
            priorities = np.asarray(priorities)
        except Exception as exc:  # ragged lists, objects numpy refuses
            raise HeuristicError(f"priority returned {type(priorities).__name__}, not an array: {exc}") from None
    if priorities.shape != (expected,):
        raise HeuristicError(f"priority returned shape {priorities.shape}, expected ({expected},)")
    kind = priorities.dtype.kind
    if kind == "b":
        return int(priorities.argmax())
    if kind not in "iuf":
        raise HeuristicError(f"priority returned dtype {priorities.dtype}, expected numbers")
    index = int(priorities.argmax())
    chosen = priorities[index]
    if kind == "f" and not math.isfinite(chosen):  # NaN (argmax returns the first NaN) or +-inf
        raise HeuristicError(f"priority returned a non-finite score ({chosen})")
    return index
