"""The outcome of one sandboxed evaluation: valid or not, why, per-instance metrics, wall time."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["EvalResult", "FailureKind"]


class FailureKind:
    """Why an evaluation is invalid (``EvalResult.kind``)."""

    OK = "ok"
    PROGRAM = "program"        # the text does not compile or define the function
    HEURISTIC = "heuristic"    # the heuristic raised, or returned NaN/inf/None/strings/wrong shape/infeasible choice
    TIMEOUT = "timeout"        # wall-clock limit hit; the worker's process tree was killed
    MEMORY = "memory"          # the memory cap was hit (MemoryError)
    WORKER_DIED = "worker_died"  # the worker process exited or was killed during the job
    PROCESSES = "processes"    # the program left child processes behind
    TAMPERED = "tampered"      # the program's process sent something that is not an answer
    FORESIGHT = "foresight"    # the program's decisions depend on the part of an instance still to come
    ERROR = "error"            # anything else (the task itself raised)

    # Failures that would repeat on every other instance of the same program: once one
    # happens, the program's remaining instances of that evaluation are skipped.
    REPEATING = frozenset({PROGRAM, TIMEOUT, MEMORY, WORKER_DIED, PROCESSES, TAMPERED, FORESIGHT})


@dataclass(frozen=True)
class EvalResult:
    """One program on a list of instances.

    ``metrics[i]`` is the metric (lower is better) on the i-th instance of the job, NaN
    where it failed or was not reached; ``reasons[i]`` is "" or why it failed. ``valid``
    is true when every instance gave a finite metric; ``reason`` and ``kind`` describe
    the first failure. ``seconds`` is the wall time seen by the caller. ``skipped``: not
    run at all, because the program already failed in a way that repeats (``reason`` then
    starts with ``"skipped: "`` and names that failure). ``compiled``: on the compiled path
    (``engine.compiled``), whether the heuristic ran compiled (``None``: not asked, or not
    reached); ``fallback``: why it ran in Python instead. ``unchecked``: how many of its jobs drawn
    for a look-ahead check could not have it (no process could be started for it: a reason
    outside the program), counted and shown, never silently valid.
    """

    metrics: tuple[float, ...]
    reasons: tuple[str, ...]
    seconds: float = 0.0
    kind: str = FailureKind.OK
    reason: str = ""
    worker: int | None = field(default=None, compare=False)
    skipped: bool = False
    compiled: bool | None = field(default=None, compare=False)
    fallback: str = field(default="", compare=False)
    unchecked: int = field(default=0, compare=False)

    @property
    def valid(self) -> bool:
        return self.kind == FailureKind.OK

    @classmethod
    def failed(cls, count: int, kind: str, reason: str, seconds: float = 0.0, worker: int | None = None):
        return cls((math.nan,) * count, (reason,) * count, seconds, kind, reason, worker)

    @classmethod
    def skipped_after(cls, failure: "EvalResult", count: int = 1) -> "EvalResult":
        """Not run: ``failure`` (a repeating failure of the same program) came first."""
        reason = f"skipped: {failure.reason}"
        return cls((math.nan,) * count, (reason,) * count, 0.0, failure.kind, reason, None, True)

    def with_seconds(self, seconds: float, worker: int | None = None) -> "EvalResult":
        return EvalResult(self.metrics, self.reasons, seconds, self.kind, self.reason,
                          self.worker if worker is None else worker, self.skipped, self.compiled, self.fallback,
                          self.unchecked)

    @classmethod
    def combine(cls, parts: list["EvalResult"], seconds: float) -> "EvalResult":
        """Results of consecutive chunks of one instance list, as one result."""
        metrics = tuple(m for p in parts for m in p.metrics)
        reasons = tuple(r for p in parts for r in p.reasons)
        first = next((p for p in parts if not p.valid), None)
        asked = [p for p in parts if p.compiled is not None]
        compiled = all(p.compiled for p in asked) if asked else None
        fallback = next((p.fallback for p in asked if not p.compiled), "")
        unchecked = sum(p.unchecked for p in parts)
        if first is None:
            return cls(metrics, reasons, seconds, compiled=compiled, fallback=fallback, unchecked=unchecked)
        return cls(metrics, reasons, seconds, first.kind, first.reason, compiled=compiled, fallback=fallback,
                   unchecked=unchecked)

    def __repr__(self) -> str:
        state = "valid" if self.valid else f"invalid[{self.kind}]: {self.reason}"
        return f"<EvalResult {state}, {len(self.metrics)} instances, {self.seconds:.3f} s>"
