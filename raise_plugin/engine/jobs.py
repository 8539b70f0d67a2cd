"""What a worker runs: a program (text or baseline) on some instances of a versioned instance set."""
from __future__ import annotations

import math
import time
import uuid
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from raise_plugin.programs import ProgramError, check_program, compile_priority
from tasks import get_task
from tasks.common.classical import classical_rules

from .failures import classify, one_line
from .results import EvalResult, FailureKind
from .role import current_judge

__all__ = ["ProgramSpec", "InstanceSet", "Job", "SourcePriority", "execute_job", "freeze_instances",
           "tampered_instances"]


@dataclass(frozen=True)
class ProgramSpec:
    """A heuristic a worker can rebuild: program ``code`` (its function ``function``, or the
    only one / the one called ``priority``), or the name of one of the task's ``baseline``s."""

    code: str | None = None
    function: str | None = None
    baseline: str | None = None
    label: str = ""

    def __post_init__(self):
        if (self.code is None) == (self.baseline is None):
            raise ValueError("give exactly one of code and baseline")

    def resolve(self, task) -> Callable:
        if self.baseline is not None:
            try:
                return classical_rules(task)[self.baseline]  # the paper's baselines and the other classical rules
            except KeyError:
                raise ProgramError(f"{task.name} has no baseline {self.baseline!r}") from None
        code_object, name = _compiled(self.code, self.function, self.label or "<program>")
        namespace: dict = {"__name__": "raise_heuristic"}  # a fresh module per job: no state carried over
        try:
            exec(code_object, namespace)
        except Exception as exc:
            raise ProgramError(f"{self.label or '<program>'}: running the module raised "
                               f"{type(exc).__name__}: {exc}") from None
        func = namespace.get(name)
        if not callable(func):
            raise ProgramError(f"{self.label or '<program>'}: no top-level function named {name!r}")
        return func

    @property
    def name(self) -> str:
        return self.label or self.baseline or self.function or "program"


@lru_cache(maxsize=256)
def _compiled(code: str, function: str | None, source: str):
    """The code object of a program and the name of its heuristic function.

    With ``function`` given the text is only compiled (the name is checked after running
    it); otherwise ``check_program`` picks the function (the only one, or ``priority``)
    from the parsed text, without running it.
    """
    if function is None:
        function = check_program(code, None, source=source)
    try:
        return compile(code, source, "exec"), function
    except SyntaxError as exc:
        raise ProgramError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes in the text
        raise ProgramError(f"{source}: cannot compile the program: {exc}") from None


class SourcePriority:
    """A compiled heuristic that pickles as its source text, so any executor can ship it.

    ``SourcePriority(code)(item, bins)`` calls the program's function. Making one only
    parses the text (``ProgramError`` at once for bad syntax or no such function); the
    program's module code runs at the first call, in the process that calls it (a sandboxed
    worker, once shipped there): after unpickling the program is compiled again. ``alone``: a
    worker's judge runs each of its evaluations in a program process of its own (as a run's
    instances are), not in the one process it keeps for the program.
    """

    def __init__(self, code: str, function: str | None = None, label: str = "", alone: bool = False):
        self.spec = ProgramSpec(code=code, function=function, label=label)
        self.alone = bool(alone)
        check_program(code, function, source=label or "<program>")
        self._func = None

    def __call__(self, *args, **kwargs):
        if self._func is None:
            if current_judge() is not None:  # a worker: programs run in program processes, never here
                raise RuntimeError("a program is never called in a worker: evaluate it through "
                                   "judge.evaluate_heuristic")
            self._func = compile_priority(self.spec.code, self.spec.function, source=self.spec.label or "<program>")
        return self._func(*args, **kwargs)

    def __reduce__(self):
        return (SourcePriority, (self.spec.code, self.spec.function, self.spec.label, self.alone))


class InstanceSet:
    """A list of instances with an identity (``id``) and a ``version``.

    Workers keep the sets they were sent, keyed by ``id``; a job names the set and its
    version, and a worker holding an older version is sent the new one before the job.
    """

    def __init__(self, instances: Sequence, set_id: str | None = None, version: int = 0):
        self.instances = list(instances)
        self.id = set_id or uuid.uuid4().hex
        self.version = int(version)

    def next_version(self, instances: Sequence) -> "InstanceSet":
        return InstanceSet(instances, self.id, self.version + 1)

    def __len__(self) -> int:
        return len(self.instances)

    def __repr__(self) -> str:
        return f"<InstanceSet {self.id[:8]} v{self.version}, {len(self.instances)} instances>"


@dataclass(frozen=True)
class Job:
    """One program on ``indices`` of instance set ``set_id`` (at ``version``) of ``task``."""

    task: str
    program: ProgramSpec
    set_id: str
    version: int
    indices: tuple[int, ...]
    timeout: float | None = None
    stop_on_failure: bool = True


# -- running a job (inside a worker) -------------------------------------------------------------

def _arrays(obj) -> list[np.ndarray]:
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, dict):
        return [a for v in obj.values() for a in _arrays(v)]
    if isinstance(obj, (list, tuple)):
        return [a for v in obj for a in _arrays(v)]
    return []


def _checksum(instance) -> int:
    crc = 0
    for a in _arrays(instance):
        if a.dtype.hasobject:
            continue
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8).reshape(-1), crc)
    return crc


def freeze_instances(instances: list) -> list[int]:
    """Make the instances' arrays read-only; their checksums, to detect tampering later."""
    for inst in instances:
        for a in _arrays(inst):
            a.setflags(write=False)
    return [_checksum(inst) for inst in instances]


def tampered_instances(instances: list, checksums: list[int], indices) -> list[int]:
    return [i for i in indices if _checksum(instances[i]) != checksums[i]]


def execute_job(job: Job, instances: list, checksums: list[int] | None = None, compiler=None) -> EvalResult:
    """Run ``job`` on ``instances`` in this process (a worker calls this). Never raises.

    With a ``compiler`` (``compiled.Compiler``: the worker's compiled path) the heuristic runs
    compiled where the compiler accepts it, from the instance after the one at which its
    evaluations in this worker have taken the compiler's ``after`` seconds in Python; an
    instance on which the compiled heuristic fails is evaluated again in Python, whose
    outcome stands.
    """
    start = time.perf_counter()
    count = len(job.indices)
    verdict = None
    try:
        task = get_task(job.task)
        evaluate = task.evaluate  # taken before the program's module code runs: it cannot replace it
        if compiler is not None:
            verdict = compiler.ready(task, job.program)
        priority = job.program.resolve(task)
    except ProgramError as exc:
        return EvalResult.failed(count, FailureKind.PROGRAM, one_line(str(exc)), time.perf_counter() - start)
    except BaseException as exc:  # noqa: BLE001 - a program's module code may raise anything
        kind, reason = classify(exc)
        if kind != FailureKind.MEMORY:  # its module code failed: as the judge's program process says it
            kind = FailureKind.PROGRAM
        return EvalResult.failed(count, kind, reason, time.perf_counter() - start)
    metrics = [math.nan] * count
    reasons = [""] * count
    first: tuple[str, str] | None = None
    fast = verdict.function if verdict is not None else None
    fallback = verdict.reason if verdict is not None else ""
    for k, index in enumerate(job.indices):
        try:
            value = None
            if fast is not None:
                value = _metric_or_none(evaluate, fast, instances[index])
                if value is not None and not verdict.still_checked():
                    value = None  # argument types the probes never gave: unchecked
                if value is None:  # the compiled heuristic failed here: Python's outcome stands
                    fast, fallback = None, ("fails on an instance compiled, or meets argument types the probes "
                                            "did not: evaluated in Python")
            if value is None:
                began = time.perf_counter()
                if k > 0:  # every instance meets a fresh module, as in the judge's program processes
                    priority = job.program.resolve(task)
                value = _metric(evaluate, priority, instances[index])
                if compiler is not None and verdict is None:  # compiled once Python has taken long enough
                    verdict = compiler.ready(task, job.program, time.perf_counter() - began)
                    if verdict is not None:
                        fast, fallback = verdict.function, verdict.reason
            metrics[k] = value
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a reason
            kind, reason = classify(exc)
            reasons[k] = reason
            if first is None:
                first = (kind, reason)
            if job.stop_on_failure or kind == FailureKind.MEMORY:
                for rest in range(k + 1, count):
                    reasons[rest] = "not evaluated: an earlier instance failed"
                break
    if checksums is not None:
        bad = tampered_instances(instances, checksums, job.indices)
        if bad:
            reason = f"the program modified the instance data (instances {bad[:5]})"
            return EvalResult.failed(count, FailureKind.TAMPERED, reason, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    compiled = None if compiler is None else fast is not None
    if compiler is not None and verdict is None:
        fallback = compiler.waiting(task, job.program)
    if first is None:
        return EvalResult(tuple(metrics), tuple(reasons), seconds, compiled=compiled, fallback=fallback)
    return EvalResult(tuple(metrics), tuple(reasons), seconds, first[0], first[1], compiled=compiled,
                      fallback=fallback)


def _metric(evaluate, priority, instance) -> float:
    value = float(evaluate(priority, instance))
    if not math.isfinite(value):
        raise ArithmeticError(f"the task returned a non-finite metric ({value})")
    return value


def _metric_or_none(evaluate, priority, instance) -> float | None:
    """The metric of a compiled heuristic, or ``None`` where it failed (a memory error is not
    the heuristic's to retry)."""
    try:
        return _metric(evaluate, priority, instance)
    except MemoryError:
        raise
    except Exception:  # noqa: BLE001 - the Python function's run decides what failed
        return None
