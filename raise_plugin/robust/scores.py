"""The score book: every program the run met, its metric on every instance it met."""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from llm4ad.base import TextFunctionProgramConverter

__all__ = ["ProgramRecord", "Rejection", "ScoreBook", "program_id_of"]

_MISSING = object()


def program_id_of(text: str) -> str:
    """The program's identity: a digest of its full text."""
    return hashlib.sha1(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Rejection:
    """A candidate's evaluation stopped early: on set ``version``, after meeting ``met`` (in the
    order met), its score could be at most ``score``, no more than ``bound``, the score of the
    worst member the search state would keep; so it cannot enter, whatever the rest holds."""

    version: int
    bound: float
    score: float
    met: tuple


@dataclass
class ProgramRecord:
    """A program and its metric (lower is better) on every instance it met; ``None`` = failed there.
    ``broken``: it failed in a way that repeats on any instance (it fails on every set)."""

    program_id: str
    text: str
    function_name: str
    metrics: dict = field(default_factory=dict)
    error: str | None = None
    broken: bool = False
    rejection: Rejection | None = None  # the latest sample of it stopped early (``InstanceSetEvaluator``)


class ScoreBook:
    """Per-program, per-instance metrics; the score on a set is ``score_of`` over the set's order."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_id: dict[str, ProgramRecord] = {}

    def record(self, text: str) -> ProgramRecord:
        """The record of the program ``text`` (a new, empty one the first time)."""
        pid = program_id_of(text)
        with self._lock:
            rec = self._by_id.get(pid)
            if rec is None:
                name = TextFunctionProgramConverter.text_to_function(text).name
                rec = self._by_id[pid] = ProgramRecord(pid, text, name)
            return rec

    def get(self, program_id: str) -> ProgramRecord | None:
        return self._by_id.get(program_id)

    def records(self) -> list[ProgramRecord]:
        with self._lock:
            return list(self._by_id.values())

    def metrics(self, program_id: str) -> dict:
        """A copy of a program's metrics by instance id (empty for a program never met)."""
        with self._lock:
            rec = self._by_id.get(program_id)
            return dict(rec.metrics) if rec else {}

    def missing(self, rec: ProgramRecord, ids: Sequence[str]) -> list[str]:
        """Instances of ``ids`` ``rec`` still needs (none once it is known to fail on the set)."""
        with self._lock:
            if rec.broken or any(rec.metrics.get(i, 0.0) is None for i in ids):
                return []
            return [i for i in ids if i not in rec.metrics]

    def score(self, rec: ProgramRecord, ids: Sequence[str], score_of: Callable) -> float | None:
        """``score_of`` of the metrics on ``ids`` in order; ``None`` if the program failed on one."""
        with self._lock:
            if rec.broken:
                return None
            values = [rec.metrics.get(i, _MISSING) for i in ids]
        if any(v is None for v in values):  # failed on a member of the set
            return None
        if any(v is _MISSING for v in values):
            raise KeyError(f"program {rec.program_id} has not met every instance of the set")
        return float(score_of(np.asarray(values, dtype=float)))

    def store(self, rec: ProgramRecord, metrics: dict, error: str | None, broken: bool) -> None:
        with self._lock:
            rec.metrics.update(metrics)
            if error:
                rec.error = error
            rec.broken = rec.broken or broken

    def sheet(self, text: str) -> "ScoreBook":
        """A book of one record, a copy of program ``text``'s as it is now: where a sample in flight
        writes what its evaluation finds, so that the book changes only when the sample is
        registered (``merge``), in sample order, whatever the order its evaluation ends in."""
        rec = self.record(text)
        sheet = ScoreBook()
        with self._lock:
            sheet._by_id[rec.program_id] = ProgramRecord(rec.program_id, rec.text, rec.function_name,
                                                         dict(rec.metrics), rec.error, rec.broken)
        return sheet

    def merge(self, sheet: "ScoreBook") -> None:
        """Take what a ``sheet``'s evaluation found into this book; its record's ``rejection`` too."""
        for found in sheet.records():
            rec = self.record(found.text)
            self.store(rec, found.metrics, found.error, found.broken)
            rec.rejection = found.rejection
