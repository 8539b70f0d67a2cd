"""This process's part in the engine: a worker holds its judge here (``current_judge``); the
engine's own process and a program's process hold none."""
from __future__ import annotations

__all__ = ["current_judge", "set_judge"]

_current: list = [None]


def current_judge():
    """The judge of this process, when it is a worker (a ``judge.Judge``), else ``None``."""
    return _current[0]


def set_judge(judge) -> None:
    _current[0] = judge
