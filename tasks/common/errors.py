"""Why a heuristic's score is invalid, how such a reason is made safe to print, and the error a
user can fix (shown as one line)."""
from __future__ import annotations

__all__ = ["HeuristicError", "UserError", "UnknownName", "BadArgument", "BadArgumentType", "one_line", "printable"]


class UserError(Exception):
    """Errors a user can fix (bad flags, files, configs, task references): a one-line message for
    the user, never a traceback; the command exits with status 2."""


class UnknownName(UserError, KeyError):
    """A name no registry holds (a task, a method): a ``KeyError`` for the lookup, a ``UserError`` for
    the user, its message naming the registered ones (not quoted as a ``KeyError``'s key is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class BadArgument(UserError, ValueError):
    """An argument of a call that it cannot take: a ``UserError`` (one line naming the argument
    and what it takes) and a ``ValueError``, as a bad setting is."""


class BadArgumentType(UserError, TypeError):
    """An argument of a kind a call does not take (a number where a class is wanted): a ``UserError``
    (one line naming the argument and what it takes) and a ``TypeError``, as Python's own for it."""


class HeuristicError(Exception):
    """The heuristic failed on an instance; the message is the one-line reason."""


def printable(text, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters, with no control character left: white
    space runs become one space and every other control character its ``\\xNN`` escape, so a
    program's message cannot move a terminal's cursor, colour it, or hide what came before."""
    line = " ".join(str(text).split())
    if not line.isprintable():
        line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def one_line(exc: Exception) -> str:
    text = printable(exc, 200)
    return text if text else "(no message)"
