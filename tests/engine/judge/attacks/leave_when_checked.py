"""Appended to another attack's text (``future_lookahead.py``): before its first decision the
heuristic looks up the stack for a decision limit, which only the look-ahead check's copy of an
instance carries, and ends its process there, so that the check has nothing to compare. A check
that counts a copy left unanswered as passed lets the look-ahead through."""
import os as _os
import sys as _sys

_looking = priority  # noqa: F821 - the attack this text is appended to defines it
_first = [True]


def _checked():
    frame = _sys._getframe(2)
    while frame is not None:
        for value in frame.f_locals.values():
            if type(value).__name__ == "Recorder" and getattr(value, "limit", None) is not None:
                return True
        if frame.f_locals.get("limit") is not None:
            return True
        frame = frame.f_back
    return False


def priority(item, bins):
    if _first[0]:
        _first[0] = False
        if _checked():
            _os._exit(0)
    return _looking(item, bins)
