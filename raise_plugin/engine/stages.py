"""The staged look-ahead check, on the program's side: its copy of an instance is revealed a
stage at a time (``Task.future_stages``). ``StagedPriority`` stands between the simulator and
the program: after each stage's end it answers the decisions made since the last one and waits
for the judge's next part of the instance, which it writes into the copy's arrays before the
simulator reads them. The judge sends that part only once the decisions before it are answered,
so each decision just before a stage's end is made with what comes next unknown."""
from __future__ import annotations

import os

import numpy as np

from tasks.common.decision import check_priorities

from .protocol import STAGE, receive_request, send_answer

__all__ = ["StagedPriority", "apply_patch"]


def apply_patch(instance: dict, patch: dict) -> None:
    """Write each ``values`` of ``patch`` (``{key: (first, values)}``) into ``instance[key]``
    from ``first`` on, in place: the simulator reads the same arrays."""
    for key, (first, values) in patch.items():
        target = instance[key]
        target[first:first + len(values)] = values


class StagedPriority:
    """The program's heuristic on a staged copy (``instance``, revealed at ``ends``)."""

    def __init__(self, priority, instance: dict, ends, requests: int, answers: int):
        self.priority, self.instance, self.ends = priority, instance, list(ends)
        self.requests, self.answers = requests, answers
        self.made: list[int] = []  # the decisions since the last stage's end
        self.count = 0
        self.stage = 0

    def __call__(self, *arguments):
        scores = self.priority(*arguments)
        try:  # the choice the simulator makes of these scores; what it refuses, it refuses itself
            given = np.asarray(scores)
            choice = check_priorities(given, given.shape[0] if given.ndim == 1 else -1)
        except Exception:  # noqa: BLE001 - the simulator's own check then says why
            return scores
        self.made.append(choice)
        self.count += 1
        if self.stage < len(self.ends) and self.count == self.ends[self.stage]:
            send_answer(self.answers, STAGE, self.made)
            self.made = []
            message = receive_request(self.requests)
            if message is None:  # the judge is gone
                os._exit(0)
            apply_patch(self.instance, message[1])
            self.stage += 1
        return scores
