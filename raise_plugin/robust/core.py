"""The wrapper's core: the instance set, the score book, the evaluator and the run's events."""
from __future__ import annotations

import inspect
import logging
import math
import threading
import time
from types import MappingProxyType
from typing import Iterable

from llm4ad.base import Function, TextFunctionProgramConverter

from ..durable import write_failure
from ..llm.answers import reading_sampler
from ..settings import default
from .evaluator import InstanceSetEvaluator
from .hooks import Callback, InstanceUpdate, ProgramView, RunSnapshot, SampleView, checked_callbacks
from .host_profiler import HostProfiler, QuietProfiler
from .host_lines import holding_back_host_advice
from .in_flight import ProgramsInFlight, evaluation_pool
from .instances import ADVERSARIAL, InstanceEntry, RunInstanceSet, instance_digest, score_function
from .llm_guard import LLMGuard
from .owned import RunOwned
from ..progress import progress_mode
from .progress import ProgressBar
from .recording import RunRecorder
from .scores import ProgramRecord, ScoreBook, program_id_of
from .tags import retag, tags

__all__ = ["RobustCore"]
log = logging.getLogger("raise_plugin.robust")


def _bind_host_arguments(host_init, args, kwargs) -> dict:
    bound = inspect.signature(host_init).bind_partial(*args, **kwargs)
    params = dict(bound.arguments)
    extra = params.pop("kwargs", {}) if "kwargs" in inspect.signature(host_init).parameters else {}
    params.update(extra)
    return params


class RobustCore:
    """Built after the host's constructor; the shape adapter (a mixin after this one) gives the
    host's search state. Callbacks reach the run through ``RunView``'s methods."""

    _bound_callbacks: tuple = ()

    def __init__(self, *args, callbacks: Iterable[Callback] | None = None, seed: int = 0,
                 recorder=None, executor=None, generation_size: int | None = None, progress: bool | str | None = None,
                 early_reject: bool = default("early_reject"),
                 programs_in_flight: int = default("programs_in_flight"), **kwargs):
        host_init = super().__init__
        params = _bind_host_arguments(host_init, args, kwargs)
        evaluation = params.get("evaluation")
        for attr in ("instances", "metrics", "score_of"):
            if not hasattr(evaluation, attr):
                raise TypeError(f"robust methods need an evaluation with instances, metrics() and score_of() "
                                f"(tasks' TaskEvaluation); {type(evaluation).__name__} has no {attr!r}")
        if params.get("profiler") is None:
            params["profiler"] = QuietProfiler()  # without one the host never counts a sample
        if "fork_proc" in inspect.signature(host_init).parameters or "kwargs" in inspect.signature(host_init).parameters:
            params.setdefault("fork_proc", "default")  # do not let the host switch the start method to spawn
        llm = params.get("llm")
        if llm is not None and not isinstance(llm, LLMGuard):
            params["llm"] = LLMGuard(llm, getattr(recorder, "path", None))
        self._llm_guard = params.get("llm")
        try:  # a refusal here (the method's own check, a callback's) leaves nothing of the run open
            host_init(**params)
            self._set_up(evaluation, callbacks, seed, recorder, executor,  # a generation of a host without: pop_size
                         params.get("pop_size") if generation_size is None else generation_size, programs_in_flight)
        except BaseException:
            self._close_parts(params["profiler"])
            raise
        self._progress = progress
        self._early_reject = bool(early_reject)
        if self._early_reject and self._admission_supported() is None:
            self._evaluator.admission = self._admission  # (it asks the aggregation for a bound each time)

    def _set_up(self, evaluation, callbacks, seed, recorder, executor, generation_size, programs_in_flight) -> None:
        if self._llm_guard is not None:
            self._llm_guard.bind(self)
        self.evaluation = evaluation
        self.task = getattr(evaluation, "task", None)
        self.callbacks: list[Callback] = list(self._bound_callbacks) + list(checked_callbacks(callbacks))
        for cb in self.callbacks:  # settings that need the task (a named baseline) or the evaluation fail here
            check = getattr(cb, "check_task", None)
            if check is not None and self.task is not None:
                check(self.task)
            check = getattr(cb, "check_evaluation", None)
            if check is not None:
                check(evaluation)
        self.seed = int(seed)
        self._generation_size = max(1, int(10 if generation_size is None else generation_size))  # hosts without one
        self._recorder = recorder  # the run directory (``RunRecorder`` writes to it, last of the callbacks)
        if recorder is not None:
            self.callbacks.append(RunRecorder(recorder))
        self._hook_lock = threading.RLock()
        self.interrupted = threading.Event()  # the run ends at once: work under way in a hook gives up
        self.hook_interrupt = False  # a KeyboardInterrupt raised in a hook stopped the run (Ctrl-C as it fired)
        self._book = ScoreBook()
        self._stale_samples = 0
        self._sampled: set[str] = set()  # the programs of the samples so far, by id
        self.repeated_samples = 0  # samples whose program an earlier sample had written
        self.hook_errors = 0
        self.stop_reason: str | None = None
        self.failure: str | None = None  # why the run could not go on (its LLM endpoint failed)
        self._refreshes = 0
        self._catch_up: list[RunSnapshot] = []
        self._started = time.time()
        self._inner = [0, 0.0]  # evaluations and seconds of the inner (adversarial) searches
        self._inner_lock = threading.Lock()
        self._sampler_seconds = 0.0  # the LLM's (or offline sampler's) time for the registered samples
        self._compute_before: dict = {}  # what a resumed run had spent before this process
        self._instances = RunInstanceSet(evaluation, evaluation.instances)
        self._evaluator = InstanceSetEvaluator(self.task, evaluation, self._book, self._instances, executor,
                                               int(getattr(self, "_num_evaluators", 1) or 1), on_failure=self.fail)
        # our evaluator keeps its cache in this process: the host's threads only wait on it; the
        # host's sampler threads each shut the pool down as they finish, which would drop the
        # samples other threads still have under way, so only the end of the run closes it
        self._evaluation_executor.shutdown(wait=False)
        self._evaluation_executor = evaluation_pool(self, programs_in_flight, self._book, self._evaluator)
        self._in_flight = self._evaluation_executor if isinstance(self._evaluation_executor, ProgramsInFlight) \
            else None
        if hasattr(self, "_sampler") and hasattr(self, "_template_program_str"):  # the host's reads answers as ours
            self._sampler = reading_sampler(self._sampler, self._template_program_str)
        self._install_shape()

    @property
    def programs_in_flight(self) -> int:
        """Programs evaluated at once (``programs_in_flight``): 1, or the number of lanes."""
        return 1 if self._in_flight is None else self._in_flight.lanes.count

    @property
    def recorder(self):
        """The run directory's writer (``rundir.RunDirectory``: ``path``, ``close()``), or ``None``: none kept."""
        return self._recorder

    # -- early rejection ------------------------------------------------------
    @property
    def early_rejection(self) -> str:
        """``on``, or why every candidate meets the whole set: switched off, an aggregation without
        a bound from part of the set (``mean``, ``balanced``; a callback may set the aggregation
        at run start), or a search state every valid sample enters."""
        if not self._early_reject:
            return "off"
        aggregation = getattr(self.evaluation, "aggregation", None)
        if aggregation is None or not getattr(aggregation, "bounded", False):
            return f"no bound: under {aggregation or 'this aggregation'} any instance not yet met can raise the score"
        return self._admission_supported() or "on"

    def _admission(self):
        """The current members, version and admission bound, read together (gate lock)."""
        with self._gate.cond:
            entries, version = self._instances.state()
            return entries, version, self._admission_bound()

    def _kept_rejected(self, func, rec: ProgramRecord, ids: list, version: int) -> bool:
        """A pending sample stopped early on this very set: it stays as registered (re-scoring it
        would only confirm that it cannot enter)."""
        rejected = tags(func).rejected
        return rejected is not None and rejected[0] == version and bool(self._book.missing(rec, ids))

    # -- the instance set -----------------------------------------------------
    def add_instance(self, instance, *, instance_id: str = "adv", origin: str = ADVERSARIAL, distance: float = 0.0,
                     generation: int | None = None, max_adversarial: int | None = None,
                     provenance: dict | None = None, arrays: dict | None = None) -> InstanceUpdate:
        """Add ``instance`` to the set, drop the oldest adversarial ones beyond ``max_adversarial``,
        re-score the population and the pending samples on the new set, fire ``on_instances_updated``.

        Call it from ``on_generation_end`` (selection paused) or before ``run``.
        """
        start = time.perf_counter()
        entry = InstanceEntry(f"{instance_id}-{instance_digest(instance)}", origin, instance, float(distance),
                              generation, dict(provenance or {}))
        entries, dropped, version = self._instances.add(entry, max_adversarial)
        self._refreshes += origin == ADVERSARIAL
        before = self._evaluator.evaluations
        rescored = self._rescore(entries)
        update = InstanceUpdate(version, (entry.view(),), tuple(e.view() for e in dropped), rescored,
                                self._evaluator.evaluations - before, time.perf_counter() - start,
                                MappingProxyType(dict(entry.provenance)), MappingProxyType(dict(arrays or {})))
        self._fire("on_instances_updated", self.snapshot(), update)
        return update

    def _rescore(self, entries: list[InstanceEntry]) -> tuple[ProgramView, ...]:
        ids = [e.instance_id for e in entries]
        version = self._instances.state()[1]
        members, pending = self._search_members_locked()
        everyone = members + pending
        records = [self.record_of(func) for func in everyone]
        kept = [self._kept_rejected(func, rec, ids, version) for func, rec in zip(everyone, records)]
        todo: dict[str, ProgramRecord] = {}
        for func, rec, keep in zip(everyone, records, kept):
            if not keep:
                todo.setdefault(rec.program_id, rec)
                retag(func, rejected=None)
        self._evaluator.score_each(list(todo.values()), entries, purpose="rescore")
        score_of = score_function(self.evaluation, entries)
        with self._gate.cond:
            for func, rec, keep in zip(everyone, records, kept):
                if tags(func).duplicate:
                    continue
                if keep:
                    func.score = tags(func).rejected[1]
                    continue
                score = self._book.score(rec, ids, score_of)
                func.score = float("-inf") if score is None or math.isnan(score) else score
            self._scores_changed()
            return tuple(self._view(f) for f in everyone)

    def with_current_score(self, rec: ProgramRecord, then):
        """``then(score, version, ids)`` with the gate lock held, once ``rec`` has met every member
        of the current set (a sample scored on an older set is evaluated on what it missed)."""
        while True:
            with self._gate.cond:
                self._gate.wait()
                entries, version = self._instances.state()
                ids = [e.instance_id for e in entries]
                if not self._book.missing(rec, ids):
                    return then(self._book.score(rec, ids, score_function(self.evaluation, entries)), version, ids)
                rejection = rec.rejection  # stopped early on this set, and still below what survival keeps
                if rejection is not None and rejection.version == version and rejection.score <= self._admission_bound():
                    return then(rejection.score, version, ids)
            self._evaluator.score_on(rec, entries)
            self._stale_samples += 1

    def _search_members_locked(self) -> tuple[list, list]:
        with self._gate.cond:
            return self._search_members()

    # -- run ------------------------------------------------------------------
    def run(self) -> dict:
        """Sample until the budget (or a stop), then return the run's summary: ``summary()`` as the
        run ended (``finished`` true unless it was stopped early), what ``summary.json`` holds."""
        if progress_mode(self._progress) != "off" and not any(isinstance(cb, ProgressBar) for cb in self.callbacks):
            self.callbacks.insert(len(self.callbacks) - 1 if self._recorder is not None else len(self.callbacks),
                                  ProgressBar(self._max_sample_nums, initial=self.samples, enabled=self._progress))
        self.take_callbacks()
        self.start_engine()
        self._fire("on_run_start", self.snapshot())
        catch_up, self._catch_up = self._catch_up, []
        if catch_up:
            with self._gate.cond:
                for snapshot in catch_up:
                    self._gate.push(self._dispatch_generation_end, snapshot)
            self._gate.dispatch()
        try:
            try:
                with holding_back_host_advice() as held:
                    super().run()  # the host's loops return nothing
                self._ended_after_init(held)
            except BaseException as exc:  # an interrupt in this thread: the host's sampler threads go on, so
                self.interrupted.set()  # they give up what their hooks have under way (an inner search),
                self.request_stop(f"ended by {type(exc).__name__}")  # and draw, and ask, nothing more
                self._fire("on_exception", self.snapshot(), exc)
                raise
            self._fire("on_run_end", self.snapshot())
            summary = self.summary(finished=self.stop_reason is None)
        finally:  # what the run opened is closed: many runs in one process (a notebook, compare's jobs) hold none
            self.close()
        return summary

    def close(self) -> None:
        """Close what the run opened, as its end does: a run object not run to its end lets its directory go so."""
        self._close_parts(getattr(self, "_profiler", None), self._evaluation_executor, self._evaluator,
                          *(c for c in self.callbacks if isinstance(c, RunOwned)))

    def _close_parts(self, profiler, *first) -> None:
        """Close ``first``, then the journals, the run directory's logs and its lock, and the host's log file."""
        for part in (*first, self._llm_guard, getattr(self, "_recorder", None),
                     profiler if isinstance(profiler, HostProfiler) else None):
            closing = getattr(part, "close", None)
            if closing is not None:
                closing()

    def request_stop(self, reason: str) -> None:
        """End the run cleanly before its budget (a callback's ``should_stop``): no new sample is
        started, those under way are registered, everything is saved, and ``resume`` continues."""
        if self.stop_reason is None:
            self.stop_reason = str(reason)
            log.info("stopping: %s", reason)  # the caller says it, and the summary records it
            if self._llm_guard is not None:  # no request after this one, not even a retry under way
                self._llm_guard.stop_requests(self.stop_reason)

    def _ended_after_init(self, held: list[str]) -> None:
        """The host ended the search after its initial population (``held``: its advice, held back): a
        failure of the run when some programs were valid (none valid: the run's summary says why), unless
        the budget ended it there (a budget below the operators' need is spent, not failed)."""
        valid = len(getattr(self, "_population", ()) or ())
        budget = getattr(self, "_max_sample_nums", None)
        if held and valid and self.failure is None and (budget is None or self.samples < budget):
            self.failure = (f"the search ended after its initial population: {valid} of its {self.samples} initial "
                            f"programs were valid, fewer than the {getattr(self, '_selection_num', 2)} its operators need")

    def fail(self, reason: str) -> None:
        """End the run because it cannot go on (the LLM endpoint failed): as ``request_stop``,
        and the run reports the failure (the CLI exits non-zero with ``reason``)."""
        if self.failure is None:
            self.failure = str(reason)
        self.request_stop(reason)

    # -- events ---------------------------------------------------------------
    def _fire(self, hook: str, snapshot: RunSnapshot, *extra) -> None:
        with self._hook_lock:
            for cb in self.callbacks:
                try:
                    getattr(cb, hook)(self, snapshot, *extra)
                except Exception as exc:  # the host's loop would swallow it silently: log and count instead
                    refused = write_failure(exc)
                    if refused is not None:  # the run directory cannot be written: stop, nothing torn
                        self.fail(str(refused))
                        continue
                    self.hook_errors += 1
                    log.exception("%s.%s failed", type(cb).__name__, hook)
                except BaseException as exc:  # an interrupt: in a host's thread it would end that thread alone, and
                    # the run would say it finished; it stops the run instead, to be resumed
                    self.request_stop(f"{type(exc).__name__} raised in {type(cb).__name__}.{hook}")
                    self.hook_interrupt = self.hook_interrupt or isinstance(exc, KeyboardInterrupt)
                    if self.interrupted.is_set():  # a hook given up: the later ones record no event left half done
                        break

    def sample_registered(self, n, func, rec, score, version, ids, joined, duplicate) -> None:
        """A sample joined (gate lock held): record it, queue ``on_sample_evaluated``. The shapes call
        it where their host registers a sample (the population's ``register_function``, the profiler's tap)."""
        metrics = {i: rec.metrics.get(i) for i in ids}
        self.count_sampled(rec.program_id)
        details = {"program_id": rec.program_id, "program": rec.text, "score": score, "joined": joined,
                   "duplicate": duplicate, "generation": self.generation, "broken": rec.broken,
                   "failed_on": tuple(k for k, v in metrics.items() if v is None and k in rec.metrics),
                   "sample_time": getattr(func, "sample_time", None),
                   "evaluate_time": getattr(func, "evaluate_time", None),
                   "cursor": self._cursor(), "work": self.work(counts_only=True)}
        rejection = rec.rejection
        if rejection is not None and rejection.version == version and score == rejection.score \
                and self._book.missing(rec, ids):
            details["rejected"] = True  # ``score``: the most its score could be; ``metrics``: what it met
            details["admission_bound"] = rejection.bound
            retag(func, rejected=(version, score))
        if self._llm_guard is not None:
            self._llm_guard.sample_registered()
        view = SampleView(n, self._view(func) if joined else ProgramView(rec.program_id, str(func),
                                                                          float("-inf"), func.algorithm or ""),
                          MappingProxyType(metrics), version, rec.error if score is None else None,
                          MappingProxyType(details))
        with self._inner_lock:
            self._sampler_seconds += float(details["sample_time"] or 0.0)
        self._gate.push(self._fire, "on_sample_evaluated", self._snapshot_locked(), view)

    def count_sampled(self, program_id: str) -> None:
        """Count a sample's program; one written by an earlier sample makes a repeated sample."""
        if program_id in self._sampled:
            self.repeated_samples += 1
        else:
            self._sampled.add(program_id)

    def _cursor(self) -> dict:
        """Where the run stands right after this sample (gate lock held): the LLM calls answered,
        and what the shape needs to continue exactly from here (``resume_cursor``)."""
        calls = self._llm_guard.calls if self._llm_guard is not None else 0
        return {"llm_calls": calls, **self._shape_cursor()}

    def generation_ended(self) -> None:
        """A generation ended (gate lock held): queue ``on_generation_end``. The shapes call it where
        their host ends one (the population's survival, every ``generation_size`` tapped samples)."""
        self._gate.push(self._dispatch_generation_end, self._snapshot_locked())

    def _dispatch_generation_end(self, snapshot: RunSnapshot) -> None:
        self._fire("on_generation_end", snapshot)

    # -- programs -------------------------------------------------------------
    def program_text_of(self, func: Function) -> str:
        """The program ``func`` is recorded under (the template's imports and its function): the key
        of its scores, its records and its duplicates."""
        key = tags(func).key
        if key is None:
            key = str(TextFunctionProgramConverter.function_to_program(func, self._template_program))
            retag(func, key=key)
        return key

    def record_of(self, func: Function) -> ProgramRecord:
        return self._book.record(self.program_text_of(func))

    def _view(self, func: Function) -> ProgramView:
        score = func.score
        score = float("-inf") if score is None or (isinstance(score, float) and math.isnan(score)) else float(score)
        return ProgramView(program_id_of(self.program_text_of(func)), str(func), score, func.algorithm or "")

    def _snapshot_locked(self) -> RunSnapshot:
        entries, version = self._instances.state()
        pending = self._search_members()[1]
        return RunSnapshot(
            generation=self.generation, samples=self.samples, budget=self._max_sample_nums,
            population=tuple(self._view(f) for f in self._shown()), pending=tuple(self._view(f) for f in pending),
            instance_set=tuple(e.view() for e in entries), instance_set_version=version,
            refreshes=self._refreshes)
