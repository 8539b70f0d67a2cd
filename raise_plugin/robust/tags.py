"""What the wrapper knows of a host ``Function`` beyond the host's own fields, in one record.

The host keeps, copies and hands back its ``Function`` objects; what the wrapper must know of
each (its program text, whether early rejection stopped it and on which set, whether it
duplicates a member, the docstring it was registered with) travels with the function as one
frozen ``Tags`` record under the attribute ``raise_tags``, replaced whole on each change (so a
copy the host makes keeps what was true when it was made, as its own attributes would)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace

__all__ = ["Tags", "tags", "retag"]

ATTRIBUTE = "raise_tags"
_CHANGING = threading.Lock()  # one change at a time: two threads tagging one function lose neither change


@dataclass(frozen=True)
class Tags:
    """``key``: the program's text (the score book's key), computed once; ``rejected``:
    ``(instance-set version, score)`` when early rejection stopped its evaluation on that set;
    ``duplicate``: it repeats a member of the population; ``docstring``: its docstring as
    registered (a host prompt may clear the function's own)."""

    key: str | None = None
    rejected: tuple[int, float] | None = None
    duplicate: bool = False
    docstring: str | None = None


def tags(func) -> Tags:
    """``func``'s record (an empty one for a function the wrapper has not tagged)."""
    return getattr(func, ATTRIBUTE, None) or Tags()


def retag(func, **changes) -> Tags:
    """Replace fields of ``func``'s record; returns the new record."""
    with _CHANGING:
        new = replace(tags(func), **changes)
        setattr(func, ATTRIBUTE, new)
    return new
