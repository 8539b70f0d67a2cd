"""Appended to ``future_planner.py``: a program that tells its look-ahead check from a run and is
honest only when checked. At its first decision on an instance it looks up its stack for what
only a check's process holds (the object that reveals the copy a stage at a time, a decision
limit, the request naming a staged copy); there it answers best fit's decisions, in a run it
plans with the future as the file above does. Telling the check from a run must pay nothing: the
check holds the copy's decisions against the run's, so a program whose decisions in the run
depended on the future is caught whether or not it knew it was checked. ``__SAY__``: the test's
switch, True to raise where it finds itself checked (so that the test sees that it can tell)."""
import sys as _sys

_planning = priority  # noqa: F821 - the planner this text is appended to defines it
_told = {}
_SAY = __SAY__


def _in_a_check():
    frame = _sys._getframe(2)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            kind = type(value).__name__
            if kind == "StagedPriority":
                return True
            if kind == "Recorder" and getattr(value, "limit", None) is not None:
                return True
            if isinstance(value, tuple) and value and isinstance(value[0], str) and value[0] == "staged":
                return True
        frame = frame.f_back
    return False


def priority(item, bins):
    if "checked" not in _told:  # a fresh module on every instance: decided once for each
        _told["checked"] = _in_a_check()
    if _told["checked"]:
        if _SAY:
            raise RuntimeError("it told the check from a run")
        return -(bins - item)  # best fit, which looks at nothing to come
    return _planning(item, bins)
