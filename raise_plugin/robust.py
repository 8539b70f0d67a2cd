"""``robust(Method)``: attach callbacks (RAISE's inner loop among them) to a host method without editing it.

    method = robust(EoH, callbacks=[AdversarialInstanceCallback(epsilon=0.002)])(
        llm=llm, evaluation=task.evaluation(), max_sample_nums=1000, pop_size=10, max_generations=None)
    method.run()

The wrapped class is a subclass of the host method. After the host's constructor it swaps
three parts for robust ones (see ``docs/robust.md`` for the host facts behind each):

- the population becomes a ``RobustPopulation`` (a mixin over the method's population
  class): survival fires ``on_generation_end`` after the population lock is released,
  duplicates are found by program text (not by score), ``None``/NaN scores count as
  ``-inf``, selection never spins on an all-``-inf`` population and draws from its own
  seeded ``numpy.random.Generator``, and a sample scored on an older instance set is
  evaluated on the instances it missed before it joins;
- the evaluator becomes an ``InstanceSetEvaluator``: per-instance metrics, cached per
  program and instance, computed in a forked child with the evaluation's timeout (or
  in-process when the evaluation sets ``safe_evaluate=False``);
- a profiler is always attached (the host only counts samples through one).

A method can be wrapped when, like llm4ad's ``EoH``, it keeps ``self._population`` (an
llm4ad ``Population`` or subclass whose ``register_function`` receives every evaluated
sample, whose ``survival`` ends a generation and whose ``selection`` picks parents),
evaluates through ``self._evaluator.evaluate_program_record_time(program)``, counts
samples in ``self._tot_sample_nums`` and keeps ``self._template_program``.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import inspect
import logging
import math
import multiprocessing
import threading
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from llm4ad.base import Function, SecureEvaluator, TextFunctionProgramConverter
from llm4ad.method.eoh.population import Population
from llm4ad.tools.profiler import ProfilerBase

from .callback import Callback, InstanceUpdate, InstanceView, ProgramView, RunSnapshot, SampleView

__all__ = ["robust", "RobustMethodMixin", "RobustPopulationMixin", "RobustPopulation", "InstanceSetEvaluator",
           "InstanceEntry", "ProgramRecord", "QuietProfiler", "instance_digest"]

NOMINAL, ADVERSARIAL = "nominal", "adversarial"
log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- instance set
@dataclass
class InstanceEntry:
    """A member of the instance set. ``instance_id`` ends in a digest of the content."""

    instance_id: str
    origin: str
    instance: Any = field(repr=False)
    distance: float = 0.0
    generation: int | None = None
    provenance: dict = field(default_factory=dict, repr=False)

    def view(self) -> InstanceView:
        return InstanceView(self.instance_id, self.origin, self.distance, self.generation)


def instance_digest(instance) -> str:
    """A short, stable digest of an instance (a dict of arrays and scalars)."""
    h = hashlib.sha1()
    items = sorted(instance.items()) if isinstance(instance, dict) else [("", instance)]
    for key, value in items:
        h.update(str(key).encode())
        arr = np.asarray(value)
        if arr.dtype == object:
            h.update(repr(value).encode())
        else:
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:10]


# --------------------------------------------------------------------------- score cache
@dataclass
class ProgramRecord:
    """A program and its metric (lower is better) on every instance it met; ``None`` = failed there."""

    program_id: str
    text: str
    function_name: str
    metrics: dict = field(default_factory=dict)
    error: str | None = None
    broken: bool = False


_MISSING = object()


def program_id_of(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


class ScoreBook:
    """Per-program, per-instance metrics; the score on a set is ``score_of`` over the set's order."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_id: dict[str, ProgramRecord] = {}

    def record(self, text: str) -> ProgramRecord:
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

    def missing(self, rec: ProgramRecord, ids: Sequence[str]) -> list[str]:
        """Instances of ``ids`` ``rec`` still needs (none once it is known to fail on the set)."""
        with self._lock:
            if rec.broken or any(rec.metrics.get(i, 0.0) is None for i in ids):
                return []
            return [i for i in ids if i not in rec.metrics]

    def score(self, rec: ProgramRecord, ids: Sequence[str], score_of: Callable) -> float | None:
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


# --------------------------------------------------------------------------- evaluator
class InstanceSetEvaluator:
    """Stands in for the host's ``SecureEvaluator``: scores a program on the current instance set.

    Only instances the program has not met are evaluated. With ``evaluation.safe_evaluate``
    (the host default) evaluations run in the sandboxed engine (``raise_plugin.engine``):
    reused worker processes, one per core by default (a sample's instances are shared among
    them, so one sampler uses every core), that keep the instance set cached,
    under the evaluation's time limit, a memory cap and the engine's audit hook;
    ``executor`` chooses another engine executor (``"process:N"``, ``"dask://..."``), or
    ``"fork"`` a fresh child per evaluation (about 5 ms each, killed after the time limit,
    no other limits). Without ``safe_evaluate`` it runs in the calling thread, with no limit.
    """

    def __init__(self, method: "RobustMethodMixin", executor=None):
        self._method = method
        evaluation = method.evaluation
        self._engine = None
        if executor is None and evaluation.safe_evaluate:
            from .engine import default_workers
            # every core: a sample's instances are shared among the workers
            executor = f"process:{max(default_workers(), int(getattr(method, '_num_evaluators', 1) or 1))}"
        if executor is not None and executor != "fork":
            from .engine import Engine
            self._engine = Engine(method.task, executor, timeout=evaluation.timeout_seconds, split=1)
        # fork_proc='default' leaves the global multiprocessing start method alone.
        self._modifier = SecureEvaluator(evaluation, fork_proc="default")
        self._context = multiprocessing.get_context("fork")
        self.evaluations = 0
        self.calls = 0
        # program-instance evaluations and their wall time, by purpose: "outer" (a new sample,
        # or one that missed a refresh) and "rescore" (the population after the set changed)
        self.by_purpose = {"outer": [0, 0.0], "rescore": [0, 0.0]}
        self._count_lock = threading.Lock()

    # host interface
    def evaluate_program_record_time(self, program, **kwargs):
        start = time.time()
        return self.evaluate_program(program), time.time() - start

    def evaluate_program(self, program, **kwargs) -> float | None:
        method = self._method
        rec = method._book.record(str(program))
        entries, _ = method._instance_state()
        ids = [e.instance_id for e in entries]
        missing = method._book.missing(rec, ids)
        if missing:
            by_id = {e.instance_id: e for e in entries}
            self.evaluate(rec, [by_id[i] for i in missing])
        return method._book.score(rec, ids, method.evaluation.score_of)

    # ours
    def evaluate(self, rec: ProgramRecord, entries: Sequence[InstanceEntry], purpose: str = "outer") -> None:
        """Evaluate ``rec`` on ``entries`` (in order, stopping at the first failure) and store the metrics."""
        if not entries:
            return
        started = time.perf_counter()
        evaluation = self._method.evaluation
        program_str = self._modifier._modify_program_code(rec.text)
        instances = [e.instance for e in entries]
        if self._engine is not None:
            values, error, broken = self._in_engine(program_str, rec.function_name, entries)
        elif evaluation.safe_evaluate:
            values, error, broken = self._in_child(evaluation, program_str, rec.function_name, instances)
        else:
            values, error, broken = _evaluate_metrics(evaluation, program_str, rec.function_name, instances)
        metrics = {e.instance_id: v for e, v in zip(entries, values)}
        if broken:
            metrics = {}
        with self._count_lock:
            self.calls += 1
            self.evaluations += len(values)
            counter = self.by_purpose[purpose]
            counter[0] += len(values)
            counter[1] += time.perf_counter() - started
        self._method._book.store(rec, metrics, error, broken)

    # failures that say nothing about one instance: the program fails on every set
    _BROKEN = ("program", "timeout", "memory", "worker_died", "processes", "tampered")

    def _in_engine(self, program_str, name, entries):
        """Through the sandboxed engine: the current set is cached in its workers, only ``entries`` run."""
        from .engine import ProgramSpec
        full, _ = self._method._instance_state()
        position = {e.instance_id: i for i, e in enumerate(full)}
        if not all(e.instance_id in position for e in entries):  # a set that changed under us
            full = list(entries)
            position = {e.instance_id: i for i, e in enumerate(full)}
        spec, instances = ProgramSpec(code=program_str, function=name), [e.instance for e in full]
        indices = [position[e.instance_id] for e in entries]
        parts = max(1, min(len(indices), self._engine.workers))
        chunks = [c.tolist() for c in np.array_split(np.asarray(indices), parts)]
        futures = [self._engine.submit_indices(spec, instances, chunk) for chunk in chunks]
        values: list = []
        # in order, as one job would: the first chunk that fails decides, later ones are ignored
        for future in futures:
            result = future.result()
            if result.kind in self._BROKEN:
                return [], result.reason, True
            for metric, reason in zip(result.metrics, result.reasons):
                if reason or not math.isfinite(metric):
                    values.append(None)
                    return values, reason or result.reason or "invalid metric", False
                values.append(float(metric))
        return values, None, False

    def close(self) -> None:
        """Stop the engine's workers (when one is used)."""
        if self._engine is not None:
            self._engine.shutdown()

    def _in_child(self, evaluation, program_str, name, instances):
        receiver, sender = self._context.Pipe(duplex=False)
        proc = self._context.Process(target=_child_main, args=(sender, evaluation, program_str, name, instances),
                                     daemon=False)
        proc.start()
        sender.close()
        try:
            timeout = evaluation.timeout_seconds
            if receiver.poll(timeout):
                values, error, broken = receiver.recv()
            else:
                values, error, broken = [], f"evaluation exceeded {timeout} s", True
        except (EOFError, OSError) as exc:
            values, error, broken = [], f"evaluation process died: {type(exc).__name__}", True
        finally:
            receiver.close()
            if proc.is_alive():
                proc.kill()
            proc.join()
        return values, error, broken


def _evaluate_metrics(evaluation, program_str: str, name: str, instances: list):
    """``(values, error, broken)``: metric per instance up to and including the first failure (``None``)."""
    try:
        namespace: dict = {}
        exec(program_str, namespace)
        func = namespace[name]
    except Exception as exc:  # the program itself does not run: it fails on every instance
        return [], f"{type(exc).__name__}: {exc}", True
    values: list = []
    for inst in instances:
        try:
            values.append(float(evaluation.metrics(func, [inst])[0]))
        except Exception as exc:  # HeuristicError or anything the heuristic raised
            values.append(None)
            return values, f"{type(exc).__name__}: {exc}", False
    return values, None, False


def _child_main(sender, evaluation, program_str, name, instances):
    try:
        sender.send(_evaluate_metrics(evaluation, program_str, name, instances))
    finally:
        sender.close()


# --------------------------------------------------------------------------- profiler
class QuietProfiler(ProfilerBase):
    """Counts samples and writes nothing; attached when the caller passes ``profiler=None``."""

    def __init__(self):
        super().__init__(log_dir=None, create_random_path=False, method_name="robust")

    def record_parameters(self, llm, prob, method):
        self._parameters = [llm, prob, method]

    def register_function(self, function, *, resume_mode=False):
        with self._register_function_lock:
            self.__class__._num_samples += 1


# --------------------------------------------------------------------------- population
class RobustPopulationMixin:
    """Mixed in front of a host population class; see the module docstring for what it changes."""

    def _robust_init(self, method: "RobustMethodMixin", rng: np.random.Generator) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._method = method
        self._rng = rng
        self._refreshing = False
        self._refresher: int | None = None
        self._events: list[RunSnapshot] = []
        self._local = threading.local()
        self.samples = 0

    # -- waiting out a refresh ------------------------------------------------
    def _wait_refresh(self) -> None:
        while self._refreshing and self._refresher != threading.get_ident():
            self._cond.wait()

    # -- host interface -------------------------------------------------------
    def register_function(self, func: Function):
        method = self._method
        text = method._program_text_of(func)
        rec = method._book.record(text)
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            while True:
                with self._cond:
                    self._wait_refresh()
                    entries, version = method._instance_state()
                    ids = [e.instance_id for e in entries]
                    missing = method._book.missing(rec, ids)
                    if not missing:
                        score = method._book.score(rec, ids, method.evaluation.score_of)
                        self._register_locked(func, rec, score, version, ids)
                        break
                # scored on an older instance set: evaluate what it missed, then try again
                by_id = {e.instance_id: e for e in entries}
                method._evaluator.evaluate(rec, [by_id[i] for i in missing])
                method._stale_samples += 1
        finally:
            self._local.depth -= 1
        self._dispatch()

    def _register_locked(self, func, rec, score, version, ids) -> None:
        self.samples += 1
        func.score = score
        joined = not (self._generation == 0 and score is None)  # the host keeps only valid ones at first
        duplicate = False
        if joined:
            if score is None or math.isnan(score):
                func.score = float("-inf")
            if self.has_duplicate_function(func):
                func.score = float("-inf")
                duplicate = True
            func._raise_duplicate = duplicate
            self._next_gen_pop.append(func)
        self._method._sample_registered(self.samples, func, rec, score, version, ids, joined, duplicate)
        if len(self._next_gen_pop) >= self._pop_size:
            self.survival()

    def has_duplicate_function(self, func) -> bool:
        # By program text: the host also calls two programs with equal scores duplicates.
        key = self._method._program_text_of(func)
        return any(self._method._program_text_of(f) == key for f in list(self._population) + self._next_gen_pop)

    def survival(self):
        with self._cond:
            if self._generation > 0 and not self._next_gen_pop:
                return  # nothing new: not a generation (the host calls survival once more after its init)
            for f in self._population + self._next_gen_pop:
                if f.score is None or math.isnan(f.score):
                    f.score = float("-inf")
            super().survival()
            snapshot = self._method._snapshot_locked()
            self._method._generation_ended(snapshot)
            self._events.append(snapshot)
        if getattr(self._local, "depth", 0) == 0:
            self._dispatch()

    def selection(self) -> Function:
        with self._cond:
            self._wait_refresh()
            funcs = [f for f in self._population if f.score is not None and math.isfinite(f.score)]
            if not funcs:  # every member failed: pick uniformly rather than spin without sampling
                funcs = list(self._population)
                if not funcs:
                    raise RuntimeError("selection from an empty population")
                return funcs[int(self._rng.integers(len(funcs)))]
            ranked = sorted(funcs, key=lambda f: f.score, reverse=True)
            p = np.array([1.0 / (r + len(ranked)) for r in range(len(ranked))])
            return ranked[int(self._rng.choice(len(ranked), p=p / p.sum()))]

    # -- generation events ----------------------------------------------------
    def _dispatch(self) -> None:
        """Fire ``on_generation_end`` for the generations that ended, with selection and registration paused."""
        while True:
            with self._cond:
                if self._refreshing or not self._events:
                    return
                self._refreshing = True
                self._refresher = threading.get_ident()
                events, self._events = self._events, []
            try:
                for snapshot in events:
                    self._method._dispatch_generation_end(snapshot)
            finally:
                with self._cond:
                    self._refreshing = False
                    self._refresher = None
                    self._cond.notify_all()

    def members(self) -> list[Function]:
        with self._cond:
            return list(self._population) + list(self._next_gen_pop)


class RobustPopulation(RobustPopulationMixin, Population):
    """llm4ad's ``Population`` with the robust behaviour."""

    def __init__(self, pop_size: int, method: "RobustMethodMixin", rng: np.random.Generator, generation: int = 0):
        Population.__init__(self, pop_size, generation)
        self._robust_init(method, rng)


def _robust_population_from(old, method, rng):
    cls = type(old)
    if not isinstance(old, RobustPopulationMixin):
        cls = type(f"Robust{cls.__name__}", (RobustPopulationMixin, cls), {})
    new = cls.__new__(cls)
    new.__dict__.update(old.__dict__)
    new._robust_init(method, rng)
    return new


class _Stopped(BaseException):
    """Raised past the host's initial loop (which swallows ``Exception``) when a stop was requested."""


# --------------------------------------------------------------------------- the method mixin
class RobustMethodMixin:
    """Everything the wrapped method adds; callbacks reach the run through these methods."""

    _bound_callbacks: tuple = ()

    def __init__(self, *args, callbacks: Iterable[Callback] | None = None, seed: int = 0,
                 recorder=None, executor=None, **kwargs):
        host_init = super().__init__
        bound = inspect.signature(host_init).bind_partial(*args, **kwargs)
        params = dict(bound.arguments)
        extra = params.pop("kwargs", {}) if "kwargs" in inspect.signature(host_init).parameters else {}
        params.update(extra)
        evaluation = params.get("evaluation")
        for attr in ("instances", "metrics", "score_of"):
            if not hasattr(evaluation, attr):
                raise TypeError(f"robust methods need an evaluation with instances, metrics() and score_of() "
                                f"(tasks' TaskEvaluation); {type(evaluation).__name__} has no {attr!r}")
        if params.get("profiler") is None:
            params["profiler"] = QuietProfiler()  # without one the host never counts a sample
        params.setdefault("fork_proc", "default")  # do not let the host switch the start method to spawn
        host_init(**params)

        self.evaluation = evaluation
        self.task = getattr(evaluation, "task", None)
        self.callbacks: list[Callback] = list(self._bound_callbacks) + list(callbacks or [])
        self.seed = int(seed)
        self._recorder = recorder
        self._hook_lock = threading.RLock()
        self._set_lock = threading.Lock()
        self._book = ScoreBook()
        self._stale_samples = 0
        self.hook_errors = 0
        self.stop_reason: str | None = None
        self._refreshes = 0
        self._set_version = 0
        self._catch_up: list[RunSnapshot] = []
        self._started = time.time()
        self._inner = [0, 0.0]  # evaluations and seconds of the inner (adversarial) searches
        self._compute_before: dict = {}  # what a resumed run had spent before this process
        self._entries: list[InstanceEntry] = [
            InstanceEntry(f"nom-{i}-{instance_digest(inst)}", NOMINAL, inst)
            for i, inst in enumerate(evaluation.instances)]
        self._nominal = [e.instance for e in self._entries]
        evaluation.nominal_count = len(self._nominal)  # nominal instances lead the set
        self._evaluator = InstanceSetEvaluator(self, executor)
        if not isinstance(self._evaluation_executor, concurrent.futures.ThreadPoolExecutor):
            # our evaluator forks per evaluation already and keeps its cache in this process
            self._evaluation_executor.shutdown(wait=False)
            self._evaluation_executor = concurrent.futures.ThreadPoolExecutor(max_workers=self._num_evaluators)
        self._population = _robust_population_from(self._population, self, np.random.default_rng(self.seed))
        if recorder is not None:
            recorder.log_nominal(self._entries)

    # -- what callbacks use ---------------------------------------------------
    @property
    def generation(self) -> int:
        return self._population.generation

    @property
    def samples(self) -> int:
        return self._population.samples

    @property
    def budget(self) -> int | None:
        return self._max_sample_nums

    @property
    def instance_set(self) -> tuple[InstanceView, ...]:
        entries, _ = self._instance_state()
        return tuple(e.view() for e in entries)

    def instance_entries(self) -> list[InstanceEntry]:
        return self._instance_state()[0]

    def nominal_instances(self) -> list:
        return list(self._nominal)

    def program_text(self, program_id: str) -> str:
        """The full program text (imports and the function) of a program the run has met."""
        rec = self._book.get(program_id)
        if rec is None:
            raise KeyError(f"unknown program {program_id!r}")
        return rec.text

    def program_metrics(self, program_id: str) -> dict:
        rec = self._book.get(program_id)
        return dict(rec.metrics) if rec else {}

    def snapshot(self) -> RunSnapshot:
        with self._population._cond:
            return self._snapshot_locked()

    def best(self) -> ProgramView | None:
        return self.snapshot().best

    @property
    def llm(self):
        """The LLM back-end behind the host's sampler (its ``usage`` ledger, when it keeps one)."""
        return getattr(self._sampler, "_sampler", None)

    @property
    def evaluations(self) -> int:
        """Program-instance evaluations so far (the cache saves the rest)."""
        return self._evaluator.evaluations

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
        with self._set_lock:
            entries = [e for e in self._entries if e.instance_id != entry.instance_id] + [entry]
            dropped = []
            if max_adversarial is not None:
                adversarial = [e for e in entries if e.origin != NOMINAL]
                dropped = adversarial[:max(0, len(adversarial) - max_adversarial)]
                entries = [e for e in entries if e not in dropped]
            self._entries = entries
            self._set_version += 1
            version = self._set_version
            self.evaluation.instances = [e.instance for e in entries]
        self._refreshes += origin == ADVERSARIAL
        if self._recorder is not None:
            self._recorder.log_instance(entry, arrays or {})
            self._recorder.log_instance_set(version, entries, self._refreshes)
        before = self._evaluator.evaluations
        rescored = self._rescore(entries)
        update = InstanceUpdate(version, (entry.view(),), tuple(e.view() for e in dropped), rescored,
                                self._evaluator.evaluations - before, time.perf_counter() - start,
                                MappingProxyType(dict(entry.provenance)))
        if self._recorder is not None:
            self._recorder.log_scores(version, [(p, self.program_metrics(p.program_id)) for p in rescored],
                                      [e.instance_id for e in entries])
        self._fire("on_instances_updated", self.snapshot(), update)
        if self._recorder is not None:
            self._recorder.write_summary(self.summary())
        return update

    def record_inner_search(self, evaluations: int, seconds: float) -> None:
        """Account an inner (adversarial) search: its instance evaluations and wall time."""
        with self._set_lock:
            self._inner[0] += int(evaluations)
            self._inner[1] += float(seconds)

    def compute(self) -> dict:
        """Instance evaluations and wall time in the outer loop, the inner searches and re-scoring.

        ``outer + inner + rescore`` is every instance evaluation of the run; the inner loop's
        share counts the inner searches and the re-scoring they cause. A resumed run adds
        what was spent before the interruption.
        """
        ev = self._evaluator
        with ev._count_lock:
            outer, rescore = list(ev.by_purpose["outer"]), list(ev.by_purpose["rescore"])
        inner = list(self._inner)
        before = self._compute_before
        out = {
            "outer_evaluations": outer[0] + int(before.get("outer_evaluations", 0)),
            "inner_evaluations": inner[0] + int(before.get("inner_evaluations", 0)),
            "rescore_evaluations": rescore[0] + int(before.get("rescore_evaluations", 0)),
            "outer_seconds": outer[1] + float(before.get("outer_seconds", 0.0)),
            "inner_seconds": inner[1] + float(before.get("inner_seconds", 0.0)),
            "rescore_seconds": rescore[1] + float(before.get("rescore_seconds", 0.0)),
        }
        total_e = out["outer_evaluations"] + out["inner_evaluations"] + out["rescore_evaluations"]
        total_s = out["outer_seconds"] + out["inner_seconds"] + out["rescore_seconds"]
        out["total_evaluations"] = total_e
        out["total_seconds"] = total_s
        out["inner_loop_share_evaluations"] = (out["inner_evaluations"] + out["rescore_evaluations"]) / total_e if total_e else 0.0
        out["inner_loop_share_seconds"] = (out["inner_seconds"] + out["rescore_seconds"]) / total_s if total_s else 0.0
        return out

    # -- run ------------------------------------------------------------------
    def run(self):
        self._fire("on_run_start", self.snapshot())
        catch_up, self._catch_up = self._catch_up, []
        if catch_up:
            pop = self._population
            with pop._cond:
                pop._events.extend(catch_up)
            pop._dispatch()
        try:
            try:
                result = super().run()
            finally:
                if self._recorder is not None:
                    self._recorder.write_summary(self.summary())
            self._fire("on_run_end", self.snapshot())
            if self._recorder is not None:
                self._recorder.write_summary(self.summary(finished=self.stop_reason is None))
        finally:
            self._evaluator.close()
        return result

    # -- ending a run early ----------------------------------------------------
    def request_stop(self, reason: str) -> None:
        """End the run cleanly before its budget (a callback's ``should_stop``): no new sample is
        started, those under way are registered, everything is saved, and ``resume`` continues."""
        if self.stop_reason is None:
            self.stop_reason = str(reason)
            log.warning("stopping: %s", reason)

    def _continue_loop(self) -> bool:
        return self.stop_reason is None and super()._continue_loop()

    def _sample_evaluate_register(self, *args, **kwargs):
        if self.stop_reason is not None:
            raise _Stopped()  # past the host's loops, which swallow ``Exception``
        return super()._sample_evaluate_register(*args, **kwargs)

    def _iteratively_init_population(self):
        try:
            super()._iteratively_init_population()
        except _Stopped:
            pass

    def _iteratively_use_eoh_operator(self):
        try:
            super()._iteratively_use_eoh_operator()
        except _Stopped:
            pass

    def state_dict(self) -> dict:
        """Checkpoint: generation, samples, instance set, callback states and the selection RNG."""
        entries, version = self._instance_state()
        return {
            "generation": self.generation,
            "samples": self.samples,
            "instance_set_version": version,
            "instance_set": [e.instance_id for e in entries],
            "refreshes": self._refreshes,
            "compute": self.compute(),
            "rng": self._population._rng.bit_generator.state,
            "callbacks": {cb.state_key: cb.state_dict() for cb in self.callbacks},
            # the wrapped method's own state (ReEvo's reflections, PartEvo's niches, ...)
            "method": super().state_dict() if hasattr(super(), "state_dict") else None,
        }

    def restore(self, log) -> None:
        """Continue from a run directory's records (``raise_plugin.rundir.RunLog``), before ``run``.

        The instance set, callback states and selection RNG come from the last checkpoint;
        the population from the last generation record, plus every sample registered after
        it as pending; per-instance metrics from every sample and re-score line. Members
        are then scored on the restored set (evaluating what a kill left missing). When a
        generation ended after the last checkpoint, its ``on_generation_end`` fires again at
        the start of ``run`` (the adversarial callback skips refreshes it already made).
        """
        ckpt = log.checkpoint or {}
        nominal_ids = log.sets[0]["members"] if log.sets else [e.instance_id for e in self._entries]
        ids = ckpt.get("instance_set") or nominal_ids

        def entry(iid):
            meta = log.instances[iid]
            return InstanceEntry(iid, meta["origin"], log.instance(iid), float(meta.get("distance") or 0.0),
                                 meta.get("generation"), dict(meta.get("provenance") or {}))

        entries = [entry(i) for i in ids]
        with self._set_lock:
            self._entries = entries
            self._set_version = int(ckpt.get("instance_set_version", 0))
            self.evaluation.instances = [e.instance for e in entries]
        self._nominal = [log.instance(i) for i in nominal_ids]
        self.evaluation.nominal_count = len(self._nominal)
        self._refreshes = int(ckpt.get("refreshes", 0))
        self._compute_before = dict(ckpt.get("compute") or {})

        def store(rec, line):
            metrics = {k: v for k, v in (line.get("metrics") or {}).items() if v is not None}
            metrics.update({k: None for k in line.get("failed_on") or []})
            self._book.store(rec, metrics, line.get("error"), bool(line.get("broken")))

        first: dict[str, dict] = {}
        for s in log.samples:
            store(self._book.record(s["program"]), s)
            first.setdefault(s["program_id"], s)
        for line in log.scores:
            rec = self._book.get(line["program_id"])
            if rec is not None:
                store(rec, line)

        def function(s, duplicate=False):
            f = TextFunctionProgramConverter.text_to_function(s["function"])
            f.algorithm = s.get("algorithm") or ""
            f._raise_key = s["program"]
            f._raise_duplicate = duplicate
            f.score = float("-inf")
            return f

        last = log.populations[-1] if log.populations else {"generation": 0, "samples": 0, "members": []}
        members, seen = [], set()
        for m in last["members"]:
            members.append(function(first[m["program_id"]], m["program_id"] in seen))
            seen.add(m["program_id"])
        pending = [function(s, bool(s.get("duplicate"))) for s in log.samples
                   if s["sample"] > last["samples"] and s.get("joined")]
        pop = self._population
        n = len(log.samples)
        with pop._cond:
            pop._population = members
            pop._next_gen_pop = pending
            pop._generation = int(last["generation"])
            pop.samples = n
        self._tot_sample_nums = n
        profiler = self._profiler
        if profiler is not None:
            type(profiler)._num_samples = n
            if hasattr(type(profiler), "_cur_gen"):
                type(profiler)._cur_gen = pop.generation
        self._rescore(entries)
        if "rng" in ckpt:
            pop._rng.bit_generator.state = ckpt["rng"]
        states = ckpt.get("callbacks", {})
        for cb in self.callbacks:
            if cb.state_key in states:
                cb.load_state_dict(states[cb.state_key])
        if ckpt.get("method") is not None and hasattr(super(), "load_state_dict"):
            super().load_state_dict(ckpt["method"])
        if pop.generation > int(ckpt.get("generation", 0)):
            self._catch_up = [self.snapshot()]
        if pop.generation >= 1:
            self._resume_mode = True

    def summary(self, finished: bool = False) -> dict:
        snap = self.snapshot()
        best = snap.best
        entries, version = self._instance_state()
        usage = None
        llm = self.llm
        if hasattr(getattr(llm, "usage", None), "to_dict"):
            usage = llm.usage.to_dict()
        describe = getattr(llm, "describe", None)
        return {
            "finished": finished,
            "stopped": self.stop_reason,
            "samples": snap.samples,
            "budget": snap.budget,
            "generations": snap.generation,
            "refreshes": self._refreshes,
            "best": None if best is None else {"program_id": best.program_id, "robust_score": best.score,
                                               "algorithm": best.algorithm,
                                               "program": self.program_text(best.program_id)},
            "instance_set_version": version,
            "instance_set": [{"instance_id": e.instance_id, "origin": e.origin, "distance": e.distance,
                              "generation": e.generation} for e in entries],
            "evaluations": self._evaluator.evaluations,
            "evaluation_calls": self._evaluator.calls,
            "stale_samples_reevaluated": self._stale_samples,
            "hook_errors": self.hook_errors,
            "compute": self.compute(),
            "seconds": time.time() - self._started,
            "llm": describe() if callable(describe) else type(llm).__name__,
            "llm_usage": usage,
        }

    # -- internals --------------------------------------------------------------
    def _instance_state(self) -> tuple[list[InstanceEntry], int]:
        with self._set_lock:
            return list(self._entries), self._set_version

    def _program_text_of(self, func: Function) -> str:
        key = getattr(func, "_raise_key", None)
        if key is None:
            key = str(TextFunctionProgramConverter.function_to_program(func, self._template_program))
            func._raise_key = key
        return key

    def _view(self, func: Function) -> ProgramView:
        score = func.score
        score = float("-inf") if score is None or (isinstance(score, float) and math.isnan(score)) else float(score)
        return ProgramView(program_id_of(self._program_text_of(func)), str(func), score, func.algorithm or "")

    def _snapshot_locked(self) -> RunSnapshot:
        pop = self._population
        entries, version = self._instance_state()
        return RunSnapshot(
            generation=pop.generation, samples=pop.samples, budget=self._max_sample_nums,
            population=tuple(self._view(f) for f in pop._population),
            pending=tuple(self._view(f) for f in pop._next_gen_pop),
            instance_set=tuple(e.view() for e in entries), instance_set_version=version,
            refreshes=self._refreshes)

    def _fire(self, hook: str, snapshot: RunSnapshot, *extra) -> None:
        with self._hook_lock:
            for cb in self.callbacks:
                try:
                    getattr(cb, hook)(self, snapshot, *extra)
                except Exception:  # the host's loop would swallow it silently: log and count instead
                    self.hook_errors += 1
                    log.exception("%s.%s failed", type(cb).__name__, hook)

    def _sample_registered(self, n, func, rec, score, version, ids, joined, duplicate) -> None:
        metrics = {i: rec.metrics.get(i) for i in ids}
        view = SampleView(n, self._view(func) if joined else ProgramView(rec.program_id, str(func),
                                                                          float("-inf"), func.algorithm or ""),
                          MappingProxyType(metrics), version, rec.error if score is None else None)
        if self._recorder is not None:
            self._recorder.log_sample(view, rec, score, joined, duplicate, self._population.generation,
                                      getattr(func, "sample_time", None), getattr(func, "evaluate_time", None))
        self._fire("on_sample_evaluated", self._snapshot_locked(), view)

    def _generation_ended(self, snapshot: RunSnapshot) -> None:
        if self._recorder is not None:
            self._recorder.log_population(snapshot)

    def _dispatch_generation_end(self, snapshot: RunSnapshot) -> None:
        self._fire("on_generation_end", snapshot)
        if self._recorder is not None:
            self._recorder.write_checkpoint(self.state_dict())

    def _rescore(self, entries: list[InstanceEntry]) -> tuple[ProgramView, ...]:
        ids = [e.instance_id for e in entries]
        by_id = {e.instance_id: e for e in entries}
        members = self._population.members()
        for func in members:
            rec = self._book.record(self._program_text_of(func))
            missing = self._book.missing(rec, ids)
            if missing:
                self._evaluator.evaluate(rec, [by_id[i] for i in missing], purpose="rescore")
        with self._population._cond:
            for func in members:
                if getattr(func, "_raise_duplicate", False):
                    continue
                rec = self._book.record(self._program_text_of(func))
                score = self._book.score(rec, ids, self.evaluation.score_of)
                func.score = float("-inf") if score is None or math.isnan(score) else score
            return tuple(self._view(f) for f in members)


def robust(method_cls: type, *, callbacks: Iterable[Callback] | None = None) -> type:
    """A subclass of ``method_cls`` that fires callbacks on its events (see the module docstring).

    ``callbacks`` given here are shared by every instance of the returned class; more can be
    passed to its constructor (``callbacks=[...]``), together with ``seed`` (parent selection)
    and ``recorder`` (a ``raise_plugin.rundir.RunDirectory``).
    """
    if not isinstance(method_cls, type):
        raise TypeError(f"robust() takes a method class, got {type(method_cls).__name__}")
    base = method_cls
    name = f"Robust{method_cls.__name__}"
    if issubclass(method_cls, RobustMethodMixin):
        return type(name, (method_cls,), {"_bound_callbacks": tuple(method_cls._bound_callbacks) + tuple(callbacks or ())})
    return type(name, (RobustMethodMixin, base), {"_bound_callbacks": tuple(callbacks or ()),
                                                   "__doc__": f"{method_cls.__name__} with callbacks (RAISE)."})
