"""The pool a wrapped method's samples are evaluated in: one program in flight (``RunPool``), or
several, in sampler lanes that take turns in a fixed order, so a run evaluates up to k programs at
once and records the same run whatever the workers or the executor.

A run with ``programs_in_flight`` k > 1 samples in k lanes (threads), numbered 0..k-1. A lane
holds the turn for everything it does to the run's state (parent selection, prompts, LLM calls,
registering its sample, the events that fires, a refresh of the instance set) and gives it up
only while its program is evaluated. The turn goes round the lanes in their order, a lane whose
loop ended leaving the round. So the n-th sample is drawn right after sample n - k was registered,
samples are registered in the order they were drawn, and the one order of these steps is fixed by
the seed and k alone; only the evaluations, which change nothing until their sample is registered,
overlap. A sample in flight writes what its evaluation finds to a sheet of its own (a copy of its
program's record, ``ScoreBook.sheet``), taken into the score book when it is registered.

Lock order: a lane takes the turn holding no other lock; the turn holder may take any of the
wrapper's locks (the gate's, the hook lock).
"""
from __future__ import annotations

import concurrent.futures
import threading

from ..settings import SETTINGS
from .evaluator import Drawn, InstanceSetEvaluator
from .scores import ScoreBook

__all__ = ["Lanes", "ProgramsInFlight", "RunPool", "evaluation_pool"]


def evaluation_pool(method, programs_in_flight: int, book: ScoreBook,
                    evaluator: InstanceSetEvaluator) -> "RunPool | ProgramsInFlight":
    """The pool a wrapped ``method``'s sampler threads submit evaluations to: as many threads as its
    evaluators (one program in flight), or ``ProgramsInFlight`` with its lanes, which evaluate
    through ``evaluator`` onto sheets of ``book``. A value the run cannot take is a one-line
    ``ValueError`` naming the setting."""
    SETTINGS["programs_in_flight"].check(programs_in_flight)
    evaluators = int(getattr(method, "_num_evaluators", 1) or 1)
    if programs_in_flight == 1:
        return RunPool(max_workers=evaluators)
    refused = method.lanes_refused(type(method))
    if refused:
        raise ValueError(f"programs_in_flight: {type(method).__name__} cannot have {programs_in_flight} programs "
                         f"in flight: {refused}")
    samplers = int(getattr(method, "_num_samplers", 1) or 1)
    if samplers != 1:
        raise ValueError(f"programs_in_flight: {programs_in_flight} programs in flight sample in as many lanes "
                         f"of their own; num_samplers must then be 1, got {samplers}")
    return ProgramsInFlight(programs_in_flight, evaluators, book, evaluator)


class RunPool(concurrent.futures.ThreadPoolExecutor):
    """The host's evaluation pool with one program in flight; ``shutdown`` from a host thread is
    ignored (each sampler thread calls it as it finishes), ``close`` ends it."""

    def shutdown(self, wait=True, *, cancel_futures=False):
        pass

    def close(self) -> None:
        super().shutdown(wait=True)


class Lanes:
    """k lanes taking turns round-robin; ``run(fn)`` runs ``fn`` in each, holding the turn."""

    def __init__(self, count: int):
        self.count = int(count)
        self._cond = threading.Condition()
        self._round: list[int] = []
        self._turn: int | None = None
        self._local = threading.local()

    def lane(self) -> int | None:
        """The calling thread's lane (``None`` outside the lanes)."""
        return getattr(self._local, "lane", None)

    def run(self, fn, *args, **kwargs) -> None:
        """``fn(*args, **kwargs)`` in every lane, each call holding the turn but while it waits for
        an evaluation; returns when every lane has ended."""
        with self._cond:
            self._round = list(range(self.count))
            self._turn = 0
        threads = [threading.Thread(target=self._lane, args=(i, fn, args, kwargs), name=f"lane-{i}")
                   for i in range(self.count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _lane(self, lane: int, fn, args, kwargs) -> None:
        self._local.lane = lane
        self.enter()
        try:
            fn(*args, **kwargs)
        finally:
            self._retire()
            self._local.lane = None

    def enter(self) -> None:
        """Wait for the calling lane's turn."""
        lane = self.lane()
        with self._cond:
            while self._turn != lane:
                self._cond.wait()

    def leave(self) -> None:
        """Give the turn to the next lane of the round (the calling lane holds it)."""
        with self._cond:
            at = self._round.index(self.lane())
            self._turn = self._round[(at + 1) % len(self._round)]
            self._cond.notify_all()

    def _retire(self) -> None:
        """The calling lane's loop ended, holding the turn: it leaves the round."""
        with self._cond:
            at = self._round.index(self.lane())
            self._round.pop(at)
            self._turn = self._round[at % len(self._round)] if self._round else None
            self._cond.notify_all()


class _Awaited:
    """The future ``ProgramsInFlight.submit`` returns: waiting for it gives up the lane's turn, and
    once the turn is back the sample's findings are in the score book."""

    def __init__(self, owner: "ProgramsInFlight", future: concurrent.futures.Future, sheet: ScoreBook):
        self._owner, self._future, self._sheet = owner, future, sheet

    def result(self, timeout=None):
        owner = self._owner
        owner.lanes.leave()
        try:
            return self._future.result()
        finally:
            owner.lanes.enter()
            owner.settle(self._sheet)


class ProgramsInFlight:
    """The host's evaluation pool with k lanes: a lane's sample is evaluated in the pool on what
    the run held when it was drawn (``Drawn``), while the other lanes take their turns.

    ``in_flight`` (read in a turn) counts the samples drawn and not yet registered: a lane draws
    no sample past the budget counting them. ``most`` is the most that were in flight at once.
    """

    def __init__(self, count: int, evaluators: int, book: ScoreBook, evaluator: InstanceSetEvaluator):
        self.lanes = Lanes(count)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(int(count), int(evaluators)))
        self._book = book
        self._evaluator = evaluator
        self.in_flight = 0
        self.most = 0

    def submit(self, fn, /, *args, **kwargs):
        if self.lanes.lane() is None:
            return self._pool.submit(fn, *args, **kwargs)
        (program,) = args
        drawn = Drawn(*self._evaluator.admitted(), self._book.sheet(str(program)))
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        return _Awaited(self, self._pool.submit(fn, program, drawn=drawn, **kwargs), drawn.sheet)

    def settle(self, sheet: ScoreBook) -> None:
        """A sample's evaluation ended (its lane holds the turn): its findings join the book."""
        self.in_flight -= 1
        self._book.merge(sheet)

    def shutdown(self, wait=True, *, cancel_futures=False):
        """Ignored: the host's sampler threads each call it as they finish; ``close`` ends the pool."""

    def close(self) -> None:
        self._pool.shutdown(wait=True)
