"""The simulators' one decision step: call the heuristic on the candidates, check its answer, pick one.

A decision is the index of the chosen candidate, one per heuristic call, in call order.
``Recorder`` wraps a heuristic and keeps its decisions; ``Replay`` stands in for a
heuristic and takes the decisions from a recorded sequence, calling nothing. Both are
passed where a simulator takes its ``priority``; ``decide`` (the Python loops) and
``run_compiled`` (the compiled loops) honour them, with the same decisions either way.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from .errors import HeuristicError, one_line

__all__ = ["check_priorities", "decide", "DecisionLimit", "Recorder", "Replay", "run_compiled"]


def check_priorities(priorities, expected: int) -> int:
    """Index of the chosen (largest, first on ties) priority, or ``HeuristicError``.

    The scores must convert to a numeric array of shape ``(expected,)``. NaN anywhere,
    ``+inf`` anywhere, or every score ``-inf`` make the choice undefined and are errors;
    ``-inf`` on some entries is allowed (a common way to rule candidates out), as are masked
    entries of a masked array (``np.ma``), which are never chosen.
    """
    returned = priorities
    if _masked(priorities):
        return _unmasked_choice(priorities, expected)
    if type(priorities) is not np.ndarray:
        try:
            priorities = np.asarray(priorities)
        except Exception as exc:  # ragged lists, objects numpy refuses
            raise HeuristicError(f"priority returned {type(priorities).__name__}, not an array: {exc}") from None
    if priorities.shape != (expected,):
        if priorities.ndim == 0 and type(returned) is not np.ndarray:  # None, a string, a generator, a number
            raise HeuristicError(f"priority returned {_a(returned)}, expected an array of shape ({expected},)")
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


def _masked(value) -> bool:
    """Whether ``value`` is a masked array (``np.ma``), without importing ``numpy.ma``: none is made
    where it is not imported. Looked up as ``np.ma``, it was imported at the first answer checked,
    in a program's process after its program ran, on what the program had changed there (a fake
    numpy made every look-ahead check of a best fit a look-ahead; a builtin replaced made the import
    loop until the check's time ran out), and in 30 ms of each instance's process."""
    masked = sys.modules.get("numpy.ma")
    return masked is not None and isinstance(value, masked.MaskedArray)


def _unmasked_choice(scores: np.ma.MaskedArray, expected: int) -> int:
    """The choice among a masked array's unmasked scores: a masked entry holds no score and is
    never chosen, as ``np.ma``'s own argmax leaves it out (its data was taken as a score)."""
    data = np.asarray(scores.data)
    if data.shape != (expected,):
        raise HeuristicError(f"priority returned a masked array of shape {data.shape}, expected ({expected},)")
    kept = np.flatnonzero(~np.ma.getmaskarray(scores))
    if kept.size == 0:
        raise HeuristicError("priority returned a masked array with every score masked")
    return int(kept[check_priorities(data[kept], kept.size)])


def _a(value) -> str:
    """What a heuristic returned, named by its type: ``None``, ``a str``, ``an int``, ``a generator``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def decide(priority, *arguments) -> int:
    """Call the heuristic on its arguments and return the index of the candidate it chose.

    ``decide(priority, *heuristic_arguments, count)``: the heuristic's arguments, as many as
    it takes, then ``count``, the number of candidates it scores (an int). ``decide(priority,
    item, bins, len(bins))`` calls ``priority(item, bins)``; ``decide(priority, loads,
    len(loads))`` a one-argument heuristic; ``decide(priority, t, rows, due, len(rows))`` a
    three-argument one. The heuristic must answer with one score per candidate.

    The simulators' one decision step: any exception of the heuristic, and any result
    ``check_priorities`` refuses, becomes a ``HeuristicError`` with a one-line reason.
    The common result (a float or integer array of the right shape) is checked inline.
    A ``Recorder`` decides with its heuristic and keeps the decision; a ``Replay`` gives
    its next recorded decision, checked against ``count``. A call without a count last (or
    without any argument for the heuristic) is a ``TypeError`` saying so.
    """
    if len(arguments) < 2 or type(arguments[-1]) is not int:
        arguments = _counted(arguments)
    if type(priority) in _STAND_INS:
        return priority._decide(arguments)
    count = arguments[-1]
    try:
        scores = priority(*arguments[:-1])
    except Exception as exc:
        raise HeuristicError(f"priority raised {type(exc).__name__}: {one_line(exc)}") from None
    if type(scores) is np.ndarray and scores.shape == (count,) and scores.dtype.kind in "fiu":
        choice = int(scores.argmax())
        chosen = scores.item(choice)
        if chosen - chosen != 0:  # NaN (argmax returns the first) or inf won the argmax
            check_priorities(scores, count)
        return choice
    return check_priorities(scores, count)


def _counted(arguments: tuple) -> tuple:
    """``arguments`` with its count as an int (numpy's integers are counts too), else the
    ``TypeError`` of a call that does not end in the number of candidates."""
    usage = "decide(priority, *heuristic_arguments, count)"
    if len(arguments) < 2:
        raise TypeError(f"{usage}: give the heuristic's arguments, then the number of candidates; got "
                        f"{len(arguments)} argument{'' if len(arguments) == 1 else 's'} after priority")
    count = arguments[-1]
    if isinstance(count, (int, np.integer)) and not isinstance(count, (bool, np.bool_)):
        return (*arguments[:-1], int(count))
    raise TypeError(f"{usage}: the last argument is the number of candidates, an int; got "
                    f"{type(count).__name__} (was the count left out?)")


class DecisionLimit(Exception):
    """A ``Recorder`` reached its decision limit; the simulation stopped there.

    Not a ``HeuristicError``: the heuristic did nothing wrong, the run was cut short.
    ``decisions`` holds the decisions recorded (exactly ``limit`` of them).
    """

    def __init__(self, limit: int, decisions: np.ndarray):
        super().__init__(f"stopped at the decision limit ({limit} decisions)")
        self.limit = limit
        self.decisions = decisions


class Recorder:
    """A heuristic whose decisions are kept: pass it as a simulator's ``priority``.

    Every decision the simulator makes with ``priority`` is appended to the recording,
    in call order; ``decisions`` returns it as a 1-D int64 array. The metric is the one
    ``priority`` alone gives. With ``limit`` (an int >= 0) the heuristic is called at
    most ``limit`` times: when the simulation needs one more decision it stops, before
    that call, by raising ``DecisionLimit``, the recording then holding exactly the first
    ``limit`` decisions (a run that needs exactly ``limit`` decisions ends normally).
    A recorder used for several runs records them one after the other, the limit
    counting them all. Called directly (by a simulator that does not decide through
    ``decide``) it answers as ``priority`` does and records nothing.
    """

    __slots__ = ("priority", "limit", "_made")

    def __init__(self, priority, limit: int | None = None):
        if type(priority) in _STAND_INS:
            raise TypeError(f"a Recorder records a heuristic, not a {type(priority).__name__}")
        if not callable(priority):
            raise TypeError(f"priority must be callable, got {type(priority).__name__}")
        if limit is not None and (type(limit) is bool or not isinstance(limit, (int, np.integer)) or limit < 0):
            raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
        self.priority = priority
        self.limit = None if limit is None else int(limit)
        self._made: list[int] = []

    @property
    def decisions(self) -> np.ndarray:
        """The decisions recorded so far, a fresh 1-D int64 array."""
        return np.array(self._made, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._made)

    def __call__(self, *args, **kwargs):
        return self.priority(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Recorder of {self.priority!r}: {len(self._made)} decisions, limit {self.limit}>"

    def _decide(self, arguments: tuple) -> int:
        if len(self._made) == self.limit:
            raise self._stopped()
        choice = decide(self.priority, *arguments)
        self._made.append(choice)
        return choice

    def restart(self) -> None:
        """Forget the decisions recorded: the simulation starts again from its beginning, and
        the decisions it makes again are recorded again."""
        self._made.clear()

    def _stopped(self) -> DecisionLimit:
        return DecisionLimit(self.limit, self.decisions)

    def _slots(self, most: int) -> np.ndarray:
        """Room for the next run's decisions: ``most`` (the most a run can make), fewer under the limit."""
        room = most if self.limit is None else min(most, self.limit - len(self._made))
        return np.full(max(room, 0), -1, dtype=np.int64)  # the loop fills a prefix


class Replay:
    """Recorded decisions standing in for a heuristic: pass it as a simulator's ``priority``.

    The simulator takes decision k from ``decisions[k]`` and calls nothing. A decision
    outside ``[0, number of candidates)``, or a run needing more decisions than given,
    raises ``HeuristicError``. ``used`` counts the decisions taken; after the run(s)
    ``check_all_used()`` refuses a sequence with decisions left over. A replay used for
    several runs takes their decisions one after the other.
    """

    __slots__ = ("decisions", "used", "_values")

    def __init__(self, decisions):
        given = np.asarray(decisions)
        if given.size == 0:
            given = given.reshape(-1).astype(np.int64)
        if given.ndim != 1:
            raise HeuristicError(f"the program's process gave decisions of shape {given.shape}, not a sequence")
        if given.dtype.kind not in "iu":
            raise HeuristicError(f"the program's process gave decisions of dtype {given.dtype}, not integers")
        if given.dtype.kind == "u" and given.size and given.max() > np.iinfo(np.int64).max:
            raise HeuristicError(f"the program's process gave decision {int(given.argmax())} = {given.max()}, "
                                 f"not a candidate index")
        self.decisions = np.array(given, dtype=np.int64)  # a private copy the caller cannot change
        self.decisions.flags.writeable = False
        self._values = self.decisions.tolist()
        self.used = 0

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<Replay of {len(self._values)} decisions: {self.used} used>"

    def _decide(self, arguments: tuple) -> int:
        count = arguments[-1]
        k = self.used
        if k >= len(self._values):
            raise self._ran_out()
        choice = self._values[k]
        if not 0 <= choice < count:
            raise self._refused(k, choice, count)
        self.used = k + 1
        return choice

    def _ran_out(self) -> HeuristicError:
        return HeuristicError(f"the program's process gave {len(self._values)} decisions; the instance needs more")

    @staticmethod
    def _refused(k: int, choice: int, count: int) -> HeuristicError:
        noun = "candidate" if count == 1 else "candidates"
        return HeuristicError(f"decision {k} is {choice}, not one of the {count} {noun}")

    def check_all_used(self) -> None:
        """``HeuristicError`` unless the simulation took every decision given."""
        if self.used != len(self._values):
            raise HeuristicError(f"the program's process gave {len(self._values)} decisions; "
                                 f"the instance needed {self.used}")


_STAND_INS = frozenset((Recorder, Replay))


def run_compiled(loop, args: tuple, priority, most: int):
    """Run a compiled simulator loop, ``loop(*args, priority, check_priorities[, choices])``.

    ``priority`` is a heuristic, a ``Recorder`` or a ``Replay``; ``most`` is the most
    decisions one run can make. A heuristic runs the loop as it always did. A recorder
    hands it its heuristic and an int64 array to write the decisions into (``limit``
    long at most: the loop stops, returning -1, before the decision that would not fit);
    a replay hands it no heuristic and its unused decisions to take them from. With the
    array the loop returns ``(result, decisions made)``, or ``None`` when it leaves the
    instance to the Python loop before any decision. Returns the loop's result (None
    passed through); the heuristic's failures become ``HeuristicError``.
    """
    kind = type(priority)
    if kind is Replay:
        start = priority.used
        try:
            out = loop(*args, None, check_priorities, priority.decisions[start:])
        except IndexError as exc:  # (k, decision, count): out of range; (k,): none left
            if len(exc.args) == 3:
                k, choice, count = exc.args
                priority.used = start + k
                raise Replay._refused(start + k, choice, count) from None
            if len(exc.args) == 1:
                priority.used = len(priority)
                raise priority._ran_out() from None
            raise
        if out is None:
            return None
        result, used = out
        priority.used = start + used
        return result
    if kind is Recorder:
        choices = priority._slots(most)
        try:
            out = _call(loop, args, priority.priority, choices)
        except HeuristicError:  # keep the decisions made before it, as the Python loop does
            priority._made.extend(choices[:np.count_nonzero(choices >= 0)].tolist())
            raise
        if out is None:
            return None
        if type(out) is int:  # -1: stopped with every slot filled
            priority._made.extend(choices.tolist())
            if priority.limit is None or len(priority._made) != priority.limit:
                raise RuntimeError(f"the compiled loop made more than {most} decisions")
            raise priority._stopped()
        result, used = out
        priority._made.extend(choices[:used].tolist())
        return result
    return _call(loop, args, priority)


def _call(loop, args, priority, *choices):
    try:
        return loop(*args, priority, check_priorities, *choices)
    except HeuristicError:
        raise
    except Exception as exc:
        raise HeuristicError(f"priority raised {type(exc).__name__}: {one_line(exc)}") from None
