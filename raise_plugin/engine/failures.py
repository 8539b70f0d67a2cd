"""Why an evaluation failed: an exception's root cause, its ``FailureKind`` and a one-line reason."""
from __future__ import annotations

from tasks.common.errors import HeuristicError, printable

from .results import FailureKind

__all__ = ["root_cause", "one_line", "classify"]


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception behind ``exc`` (tasks re-raise a heuristic's error ``from None``)."""
    seen = set()
    while exc.__context__ is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__context__
    return exc


def one_line(text: str, limit: int = 300) -> str:
    return printable(text, limit)


def classify(exc: BaseException) -> tuple[str, str]:
    """(kind, reason) of an exception raised while evaluating a heuristic."""
    cause = root_cause(exc)
    if isinstance(cause, MemoryError) or isinstance(exc, MemoryError):
        detail = str(exc) if isinstance(exc, HeuristicError) else f"MemoryError: {cause}"
        return FailureKind.MEMORY, one_line(f"exceeded the memory cap ({detail})")
    if isinstance(exc, HeuristicError):
        return FailureKind.HEURISTIC, one_line(str(exc))
    if not isinstance(exc, Exception):  # SystemExit, KeyboardInterrupt, GeneratorExit: no task raises them
        return FailureKind.HEURISTIC, one_line(f"the program raised {_named(exc)}")
    if isinstance(exc, RecursionError):
        return FailureKind.HEURISTIC, one_line(f"RecursionError: {exc}")
    return FailureKind.ERROR, one_line(f"evaluation raised {_named(exc)}")


def _named(exc: BaseException) -> str:
    """``exc``'s type, then its message where it has one (``KeyError: 'x'``, ``GeneratorExit``)."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message.strip() else type(exc).__name__
