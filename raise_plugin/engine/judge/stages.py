"""The staged look-ahead check, on the program's side: its copy of an instance is revealed a
stage at a time (``Task.future_stages``). ``StagedPriority`` stands between the simulator and
the program: after each stage's end it answers the decisions made since the last one and waits
for the judge's next part of the instance, which it writes into the copy's arrays. The judge
sends that part only once the decisions before it are answered, so each decision just before a
stage's end is made with what comes next unknown.

Where the simulator reads the instance as it goes (``Task.stages_in_place``) the run goes on
over the revealed arrays. Elsewhere the simulator has derived its state from the whole copy at
its start, so the reveal starts the run again (``Reveal``): the decisions made so far are
replayed without calling the program, which is then asked the next one, as it was first."""
from __future__ import annotations

import os
import sys

import numpy as np

from tasks.common.decision import check_priorities

from .protocol import PROGRAM, STAGE, receive_request, send_answer

__all__ = ["StagedPriority", "Reveal", "apply_patch"]

_OWN_LIMIT = sys.getrecursionlimit()  # the process's recursion limit before any program ran
_HEADROOM = 8  # levels above a program's calls in a check, past the 2 to 4 it adds (``evaluating``'s run, the call)


def apply_patch(instance: dict, patch: dict) -> None:
    """Write each ``values`` of ``patch`` (``{key: (index, values)}``) into ``instance[key]``, in
    place (the simulator reads the same arrays): from row ``index`` on where it is an int, else
    into the rows ``index`` lists."""
    for key, (index, values) in patch.items():
        target = instance[key]
        if isinstance(index, (int, np.integer)):
            target[index:index + len(values)] = values
        else:
            target[np.asarray(index, dtype=np.intp)] = values


class Reveal(BaseException):
    """A stage's part is revealed: the run starts again from its beginning. Not an
    ``Exception``: the simulators pass it on as they found it, not as the heuristic's failure."""


class StagedPriority:
    """The program's heuristic on a staged copy (``instance``, revealed at ``ends``);
    ``in_place``: the task's simulator reads the revealed arrays in a run in progress."""

    def __init__(self, priority, instance: dict, ends, requests: int, answers: int, in_place: bool = True,
                 held=None):
        self.priority, self.instance, self.ends = priority, instance, list(ends)
        self.requests, self.answers, self.in_place = requests, answers, in_place
        self.held = held  # the builtins and modules as before the program ran (``sandbox.HeldModules``), or None
        self.made: list[int] = []    # the decisions since the last stage's end
        self.earlier: list[int] = []  # the decisions before it, replayed when the run starts again
        self.calls = 0               # the calls of this run
        self.theirs = self.given = None  # the recursion limit the program set, and the one this check gave it
        self.stage = 0

    def __call__(self, *arguments):
        calls = self.calls
        self.calls = calls + 1
        if calls < len(self.earlier):  # a decision made before the run started again: the program is not asked
            scores = np.zeros(len(arguments[-1]), dtype=np.int8)
            scores[self.earlier[calls]] = 1
            return scores
        theirs = self._theirs()
        if theirs < _OWN_LIMIT:  # the program lowered the limit: its calls here run deeper than in its run
            self._give(theirs)
        scores = self.priority(*arguments)
        theirs = self._theirs()
        if theirs >= _OWN_LIMIT:
            return self._decided(scores, calls)
        # the check's own steps run under this process's limit (a RecursionError of theirs lost a decision, called
        # a look-ahead), and the program's under its own, with the headroom it had in its run
        sys.setrecursionlimit(_OWN_LIMIT)
        try:
            return self._decided(scores, calls)
        finally:
            self._give(theirs)

    def _theirs(self) -> int:
        """The recursion limit the program set: the one in force, less the headroom this check gave it."""
        limit = sys.getrecursionlimit()
        return self.theirs if limit == self.given else limit

    def _give(self, theirs: int) -> None:
        """The program's limit ``theirs`` in force, with ``_HEADROOM`` more: the levels this check adds under its
        calls (before, they ran under its limit itself, and failed in the check at limits that held in its run:
        setting the limit back failed too, "cannot set the recursion limit", both called behaving otherwise)."""
        self.theirs, self.given = theirs, theirs + _HEADROOM
        sys.setrecursionlimit(self.given)

    def _decided(self, scores, calls: int):
        """``scores``, the choice of them kept; at a stage's end, answered and the next part revealed."""
        try:  # the choice the simulator makes of these scores; what it refuses, it refuses itself
            given = scores if isinstance(scores, np.ndarray) else np.asarray(scores)  # a masked array stays one
            choice = check_priorities(given, given.shape[0] if given.ndim == 1 else -1)
        except Exception:  # noqa: BLE001 - the simulator's own check then says why
            return scores
        self.made.append(choice)
        if self.stage < len(self.ends) and calls + 1 == self.ends[self.stage]:
            changed = self.held.put_back() if self.held is not None else ""
            if changed:  # said as the program's failure: these answers run on those names too
                send_answer(self.answers, PROGRAM, reason=changed)
                os._exit(0)
            send_answer(self.answers, STAGE, self.made)
            message = receive_request(self.requests)
            if message is None:  # the judge is gone
                os._exit(0)
            apply_patch(self.instance, message[1])
            self.stage += 1
            if not self.in_place:
                self.earlier += self.made
                self.made = []
                self.calls = 0
                raise Reveal
            self.made = []
        return scores

    def evaluating(self, evaluate):
        """``evaluate(recorder, instance)`` run again from its beginning at every reveal, the
        recorder then holding the decisions of the last run only (the earlier ones replayed)."""
        def run(recorder, instance):
            theirs = self._theirs()
            if theirs < _OWN_LIMIT:  # the task's code here runs a level deeper than in the program's run too
                self._give(theirs)
            while True:
                try:
                    return evaluate(recorder, instance)
                except Reveal:
                    recorder.restart()
        return run
