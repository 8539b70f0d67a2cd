"""The simulators' one decision step: call the heuristic on the candidates, check its answer, pick one."""
from __future__ import annotations

import math

import numpy as np

from .errors import HeuristicError, one_line

__all__ = ["check_priorities", "decide"]


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


def decide(priority, first, second, count: int) -> int:
    """Call ``priority(first, second)`` on ``count`` candidates and return the chosen index.

    The simulators' one decision step: any exception of the heuristic, and any result
    ``check_priorities`` refuses, becomes a ``HeuristicError`` with a one-line reason.
    The common result (a float or integer array of the right shape) is checked inline.
    """
    try:
        scores = priority(first, second)
    except Exception as exc:
        raise HeuristicError(f"priority raised {type(exc).__name__}: {one_line(exc)}") from None
    if type(scores) is np.ndarray and scores.shape == (count,) and scores.dtype.kind in "fiu":
        choice = int(scores.argmax())
        chosen = scores.item(choice)
        if chosen - chosen != 0:  # NaN (argmax returns the first) or inf won the argmax
            check_priorities(scores, count)
        return choice
    return check_priorities(scores, count)
