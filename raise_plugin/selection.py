"""Selection discipline: heuristics are chosen on training, robust or validation scores, never on the test suite.

Every harness function that selects or ranks heuristics takes the suite it selects on
(``select_on``, added by the ``selects_on`` decorator) and checks it with
``check_selection_suite``: the test suite is refused, so it stays an unbiased final report.
"""
from __future__ import annotations

import functools

from raise_plugin.errors import UserError

__all__ = ["SELECTION_SUITES", "check_selection_suite", "selects_on"]

# nominal: the training set; robust: the training set grown by adversarial instances;
# validation: a held-out suite of shifted datasets (``task.validation_suite()``)
SELECTION_SUITES = ("nominal", "robust", "validation")


def check_selection_suite(select_on: str, allowed: tuple[str, ...] = SELECTION_SUITES) -> str:
    """``select_on`` if a heuristic may be selected on it here; a one-line ``UserError`` otherwise."""
    if select_on == "test":
        raise UserError("select_on='test' refused: the test suite is for the final report only; "
                        "select on the nominal or validation suite")
    if select_on not in allowed:
        raise UserError(f"select_on: {select_on!r} is not a suite to select on here; choose from {', '.join(allowed)}")
    return select_on


def selects_on(*allowed: str):
    """Mark a function that selects or ranks heuristics: it takes a keyword ``select_on``
    (default: the first of ``allowed``), checked before the function runs."""
    def wrap(fn):
        @functools.wraps(fn)
        def checked(*args, select_on: str = allowed[0], **kwargs):
            check_selection_suite(select_on, allowed)
            return fn(*args, **kwargs)
        checked.select_on = allowed
        return checked
    return wrap
