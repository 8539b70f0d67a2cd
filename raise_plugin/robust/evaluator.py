"""One evaluator: a program on the members of the instance set it has not met, cached and counted.

Generated code runs one way: as engine jobs (``raise_plugin.engine``), in its sandboxed
workers (time limit, memory cap, audit hook, reused processes) or, when the evaluation
sets ``safe_evaluate=False``, in the calling thread; an ``EvalResult`` either way.
"""
from __future__ import annotations

import concurrent.futures
import math
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from tasks.common.errors import printable

from ..engine import Engine, default_workers
from ..engine.evaluator import host_code_edits
from ..engine.jobs import Job, ProgramSpec, execute_job
from ..engine.results import EvalResult, FailureKind
from ..errors import UserError
from .instances import InstanceEntry, RunInstanceSet, bound_function, rejection_order, score_function
from .scores import ProgramRecord, Rejection, ScoreBook

__all__ = ["ProgramRunner", "InstanceSetEvaluator", "Drawn", "outcome"]

_UNMET = object()


@dataclass(frozen=True)
class Drawn:
    """What a new sample is evaluated against: the members, version and admission bound of the set
    read when it was drawn, and the book its findings go to (a sheet, for a sample in flight)."""

    entries: list
    version: int
    bound: float
    sheet: ScoreBook


class ProgramRunner:
    """Runs a program on chosen members of an instance list.

    With ``evaluation.safe_evaluate`` (the host default) through an ``Engine`` on ``executor``
    (default: every core, ``process:max(cores, workers)``), a program's instances shared
    among the workers; without it, in the calling thread with no limit.
    """

    def __init__(self, task, evaluation, executor=None, workers: int = 1, on_failure=None):
        self._task = task
        self._on_failure = on_failure  # told why, when the place programs run on fails (not a program)
        self._closed = False
        self._safe = bool(evaluation.safe_evaluate)
        self._timeout = evaluation.timeout_seconds
        self._executor = executor
        self._workers = int(workers or 1)
        self._engine = None
        self._lock = threading.Lock()

    @property
    def engine(self):
        """The engine (started on first use; ``None`` when programs run in the calling thread)."""
        if not self._safe:
            return None
        with self._lock:
            if self._engine is None:
                executor = self._executor
                if executor is None:
                    executor = f"process:{max(default_workers(), self._workers)}"
                try:
                    self._engine = Engine(self._task, executor, timeout=self._timeout, split=1)
                except UserError:
                    raise
                except Exception as exc:  # the place cannot take programs: no program's failure, nor a sample's
                    raise UserError(f"executor {executor!r}: the workers that run programs could not start "
                                    f"({type(exc).__name__}: {exc})") from exc
            return self._engine

    def run(self, code: str, function: str, instances: list, indices: Sequence[int]) -> list[EvalResult]:
        """``EvalResult``s covering ``instances[i] for i in indices``, in order (the whole list is
        the set the engine caches in its workers)."""
        spec = ProgramSpec(code=code, function=function)
        engine = self.engine
        if engine is None:
            job = Job(self._task.name, spec, "local", 0, tuple(int(i) for i in indices))
            return [execute_job(job, instances)]
        parts = max(1, min(len(indices), engine.workers))
        chunks = [c.tolist() for c in np.array_split(np.asarray(indices), parts)]
        try:
            futures = [engine.submit_indices(spec, instances, chunk) for chunk in chunks]
            return [f.result() for f in futures]
        except Exception as exc:  # whatever a program does comes back as its result: this is the place failing
            if self._on_failure is not None and not self._closed:  # (an engine closed under a late evaluation: no)
                self._on_failure(f"the engine running programs failed ({self._executor or 'its workers'}): "
                                 f"{type(exc).__name__}: {printable(str(exc))}; resume continues the run")
            raise

    @property
    def width(self) -> int:
        """How many instances run at once (one job each): the engine's workers, 1 in the calling thread."""
        engine = self.engine
        return 1 if engine is None else max(1, engine.workers)

    def close(self) -> None:
        with self._lock:
            engine, self._engine, self._closed = self._engine, None, True
        if engine is not None:
            engine.shutdown()


def outcome(results: Sequence[EvalResult]) -> tuple[list, str | None, bool]:
    """``(values, error, broken)`` of consecutive results: metrics up to and including the first
    failure (``None``), its reason, and whether it repeats on every instance (then no values)."""
    values: list = []
    for result in results:
        if result.kind in FailureKind.REPEATING:
            return [], result.reason, True
        for metric, reason in zip(result.metrics, result.reasons):
            if reason or not math.isfinite(metric):
                values.append(None)
                return values, reason or result.reason or "invalid metric", False
            values.append(float(metric))
    return values, None, False


class InstanceSetEvaluator:
    """Stands in for the host's ``SecureEvaluator``: scores a program on the current instance set.

    Given the score book and the instance set (not the method): only members a program has
    not met are evaluated, the metrics go into the book, and evaluations are counted by
    purpose: ``outer`` (a new sample, or one that missed a refresh) and ``rescore`` (the
    population after the set changed).

    Early rejection: with ``admission`` set (a callable giving the current members, version and
    admission bound together) and an aggregation that bounds the score from part of the set, a
    new sample meets the set in ``rejection_order``, as many instances at a time as the engine
    has workers, and stops at the first point of that order where its score can be at most the
    bound (``Rejection``); a point before the order's end, since at its end the candidate has met
    the whole set and is scored. Where it stops is decided on that order alone, so neither the
    number of workers nor the cache moves it; the metrics met after it in the same round are dropped.
    A failure before that point is evaluated as without rejection (in the set's order), so a
    failing sample records what it records without it.
    """

    def __init__(self, task, evaluation, book: ScoreBook, instance_set: RunInstanceSet, executor=None,
                 workers: int = 1, on_failure=None):
        self._evaluation = evaluation
        self._book = book
        self._set = instance_set
        self._runner = ProgramRunner(task, evaluation, executor, workers, on_failure)
        self.evaluations = 0
        self.calls = 0
        self.by_purpose = {"outer": [0, 0.0], "rescore": [0, 0.0]}
        self.admission = None  # () -> (entries, version, bound), set by the wrapper when rejection is on
        self.rejected = 0  # samples stopped early
        self.saved = 0  # instance evaluations they did not need
        self._count_lock = threading.Lock()
        self._in_batch = threading.local()  # set in score_each's threads: the batch counts its own wall time

    @property
    def engine(self):
        """The engine the programs run on (started on first use; ``None`` when they run in the
        calling thread, ``safe_evaluate=False``)."""
        return self._runner.engine

    # host interface
    def evaluate_program_record_time(self, program, **kwargs):
        start = time.time()
        return self.evaluate_program(program, **kwargs), time.time() - start

    def evaluate_program(self, program, *, drawn: Drawn | None = None, **kwargs) -> float | None:
        """The score of a new sample on the current set (or, given ``drawn``, on the set and bound
        read when it was drawn, its findings written to ``drawn.sheet``)."""
        drawn = drawn or Drawn(*self.admitted(), self._book)
        book = drawn.sheet
        rec = book.record(str(program))
        rec.rejection = None
        if drawn.bound > -math.inf:
            return self.score_or_reject(rec, drawn.entries, drawn.version, drawn.bound, book)
        return self.score_on(rec, drawn.entries, book=book)

    # ours
    def admitted(self) -> tuple[list[InstanceEntry], int, float]:
        """What a new sample meets, read now: the members, the set's version and the admission bound
        (``-inf`` without early rejection)."""
        if self.admission is not None:
            return self.admission()
        entries, version = self._set.state()
        return entries, version, -math.inf

    def score_on(self, rec: ProgramRecord, entries: Sequence[InstanceEntry], purpose: str = "outer", *,
                 book: ScoreBook | None = None) -> float | None:
        """The score of ``rec`` on ``entries``, evaluating the members it has not met."""
        book = book or self._book
        ids = [e.instance_id for e in entries]
        missing = set(book.missing(rec, ids))
        if missing:
            self.evaluate(rec, [e for e in entries if e.instance_id in missing], purpose, book=book)
        return book.score(rec, ids, score_function(self._evaluation, entries))

    def score_each(self, records: Sequence[ProgramRecord], entries: Sequence[InstanceEntry],
                   purpose: str = "rescore") -> None:
        """``score_on`` for each of ``records`` (distinct programs), as many at once as the engine
        has workers: a refresh usually adds one instance, so one program is one job, and the
        programs are what there is to spread. Each program's metrics are its own, so the order
        in which they finish changes nothing. The time counted for ``purpose`` is the wall time
        of the whole batch, not the sum of its overlapping calls."""
        ids = [e.instance_id for e in entries]  # a program that met every member needs no worker: none is started
        records = [rec for rec in records if self._book.missing(rec, ids)]  # (a resume's members, recorded whole)
        if not records:
            return
        width = self._runner.width
        if width <= 1 or len(records) <= 1:
            for rec in records:
                self.score_on(rec, entries, purpose)
            return

        def one(rec):
            self._in_batch.active = True
            try:
                self.score_on(rec, entries, purpose)
            finally:
                self._in_batch.active = False

        started = time.perf_counter()
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(width, len(records))) as pool:
                for _ in pool.map(one, records):
                    pass
        finally:
            with self._count_lock:
                self.by_purpose[purpose][1] += time.perf_counter() - started

    def score_or_reject(self, rec: ProgramRecord, entries: Sequence[InstanceEntry], version: int,
                        bound: float, book: ScoreBook | None = None) -> float | None:
        """The score of ``rec`` on ``entries``, or, once it provably cannot exceed ``bound``, the
        most it could be (``rec.rejection`` then says so): see the class docstring."""
        book = book or self._book
        ids = [e.instance_id for e in entries]
        missing = set(book.missing(rec, ids))
        upper = bound_function(self._evaluation, entries)
        if not missing or upper is None:
            return self.score_on(rec, entries, book=book)
        started = time.perf_counter()
        known = book.metrics(rec.program_id)
        order = rejection_order(entries)
        width = self._runner.width
        code = None
        new: dict = {}  # instance id -> metric met in this call (None: failed there)
        ran = 0
        while True:
            positions, values, rejected, failed, complete = [], [], None, False, True
            for pos in order:
                iid = ids[pos]
                value = known[iid] if iid not in missing else new.get(iid, _UNMET)
                if value is _UNMET:
                    complete = False
                    break
                if value is None:
                    failed = True
                    break
                positions.append(pos)
                values.append(value)
                most = upper(positions, values)
                if most <= bound:
                    rejected = most
                    break
            if rejected is not None or failed or complete:
                break
            todo = [pos for pos in order if ids[pos] in missing and ids[pos] not in new][:width]
            if code is None:
                code, _ = host_code_edits(self._evaluation, rec.text)
            results = self._runner.run(code, rec.function_name, [e.instance for e in entries], todo)
            for pos, result in zip(todo, results):
                met, _, broken = outcome([result])
                new[ids[pos]] = None if broken or not met or met[-1] is None else met[0]
            ran += len(todo)
        with self._count_lock:
            self.calls += 1
            self.evaluations += ran
            counter = self.by_purpose["outer"]
            counter[0] += ran
            counter[1] += time.perf_counter() - started
        if failed:  # as without rejection: the set's order decides which failure it records
            self.evaluate(rec, [e for e in entries if e.instance_id in missing], "outer", book=book)
            return book.score(rec, ids, score_function(self._evaluation, entries))
        if rejected is None or len(positions) == len(order):  # at the order's last instance: its score, no stop
            book.store(rec, new, None, False)
            return book.score(rec, ids, score_function(self._evaluation, entries))
        met = [ids[p] for p in positions]
        book.store(rec, {i: new[i] for i in met if i in missing}, None, False)
        rec.rejection = Rejection(version, float(bound), float(rejected), tuple(met))
        with self._count_lock:
            self.rejected += 1
            self.saved += len(missing) - ran
        return float(rejected)

    def counts(self) -> dict:
        with self._count_lock:
            return {"outer": list(self.by_purpose["outer"]), "rescore": list(self.by_purpose["rescore"])}

    def evaluate(self, rec: ProgramRecord, entries: Sequence[InstanceEntry], purpose: str = "outer", *,
                 book: ScoreBook | None = None) -> None:
        """Evaluate ``rec`` on ``entries`` (in order, stopping at the first failure) and store the metrics."""
        if not entries:
            return
        started = time.perf_counter()
        code, _ = host_code_edits(self._evaluation, rec.text)
        full, _ = self._set.state()
        position = {e.instance_id: i for i, e in enumerate(full)}
        if not all(e.instance_id in position for e in entries):  # a set that changed under us
            full = list(entries)
            position = {e.instance_id: i for i, e in enumerate(full)}
        results = self._runner.run(code, rec.function_name, [e.instance for e in full],
                                   [position[e.instance_id] for e in entries])
        values, error, broken = outcome(results)
        metrics = {} if broken else {e.instance_id: v for e, v in zip(entries, values)}
        with self._count_lock:
            self.calls += 1
            self.evaluations += len(values)
            counter = self.by_purpose[purpose]
            counter[0] += len(values)
            if not getattr(self._in_batch, "active", False):
                counter[1] += time.perf_counter() - started
        (book or self._book).store(rec, metrics, error, broken)

    def close(self) -> None:
        """Stop the engine's workers (when one is used)."""
        self._runner.close()
