"""Why a heuristic's score is invalid."""
from __future__ import annotations

__all__ = ["HeuristicError", "one_line"]


class HeuristicError(Exception):
    """The heuristic failed on an instance; the message is the one-line reason."""


def one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else "(no message)"
