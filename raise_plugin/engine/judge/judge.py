"""The judge: a program runs in a process of its own, forked from a clean spawner and confined
(seccomp, Landlock, resource limits, an audit hook), and answers each instance with its decisions
as raw integers; the worker, which never runs a program's code, replays them with the task's own
simulator to score them. Nothing a program's process sends is unpickled.

Processes, one worker (``worker.worker_main``) each::

    worker (the judge)   holds the instance sets, scores decisions, answers the engine
      spawner            forked by the worker before it holds anything; forks program processes
        program process  one per instance (per program on the compiled path): runs the program

The program's process is ``program_process``, the spawner and the worker's side of it
``spawner``, what they say to each other ``protocol``, the look-ahead check ``foresight``.
"""
from __future__ import annotations

import math
import time

import numpy as np

from tasks import get_task, reference_of
from tasks.common.decision import Replay
from tasks.common.errors import HeuristicError, printable

from ..jobs import SourcePriority
from ..limits import SandboxLimits
from ..results import EvalResult, FailureKind
from ..role import current_judge
from .foresight import UNCHECKED, check_budget, looks_ahead
from .protocol import AS_THE_JOB, DONE, HEURISTIC, KINDS, MEMORY, Malformed, Record
from .spawner import ProgramProcesses, reap_orphans

__all__ = ["Judge", "evaluate_heuristic", "finite_metric", "deadline_of"]

_DECISIONS_BOUND = 1 << 24  # decisions one instance may take, for tasks that do not say


class Judge:
    """The worker's side: starts program processes, hands them instances, scores their decisions.

    Built in the worker before it holds any instance set (its spawner is forked then)."""

    def __init__(self, limits: SandboxLimits, workdir: str):
        self.limits = limits
        self.workdir = workdir
        self._replayable: dict[str, bool] = {}
        self.processes = ProgramProcesses(limits, workdir)  # its spawner is forked now

    def close(self) -> None:
        self.processes.close()

    # -- scoring ---------------------------------------------------------------------------------
    def replayable(self, task) -> bool:
        """Whether ``task``'s simulator takes its decisions through ``decide`` (then the judge
        replays them); found once per task, by replaying no decision on a nominal instance."""
        name = getattr(task, "name", repr(task))
        if name not in self._replayable:
            try:
                task.evaluate(Replay(np.zeros(0, dtype=np.int64)), task.nominal_instances()[0])
                replayable = False  # an instance with no decision to take tells nothing
            except HeuristicError as exc:  # out of decisions: it asked the replay for one
                replayable = "gave 0 decisions; the instance needs more" in str(exc)
            except Exception:  # noqa: BLE001 - it called the replay as a function
                replayable = False
            self._replayable[name] = replayable
        return self._replayable[name]

    def score(self, task, instance, record: Record) -> float:
        """The metric the decisions earn, from the task's own simulator in this process;
        ``HeuristicError`` for a decision that is not one of the candidates, or too few or many."""
        if not self.replayable(task):
            metric = record.metric  # a task whose simulator cannot replay: the program's process scored it
        else:
            replay = Replay(record.decisions)
            metric = float(task.evaluate(replay, instance))
            replay.check_all_used()
        return finite_metric(metric)

    def run_job(self, job, instances: list) -> EvalResult:
        """``job`` on ``instances`` (the worker's cached set): decisions from a program process,
        scores from the replay. Never raises."""
        start = time.perf_counter()
        count = len(job.indices)
        try:
            task = get_task(job.task)
        except Exception as exc:  # noqa: BLE001 - reported as the task's failure
            return EvalResult.failed(count, FailureKind.ERROR, printable(f"the task failed: {exc}"))
        deadline = deadline_of(job.timeout)
        metrics, reasons = [math.nan] * count, [""] * count
        first: tuple[str, str] | None = None
        compiled: list[bool | None] = []
        originals: list[tuple[int, np.ndarray, bool]] = []  # (index, decisions, said to have run compiled)
        note = ""
        process = None
        try:
            for k, index in enumerate(job.indices):
                # every instance in a process of its own (on the compiled path, one process a program, which
                # keeps its compiled code): what a program leaves in the modules it imports reaches no other
                if process is None or not self.limits.jit:
                    if process is not None:
                        self.processes.drop(process)
                        if process.left_folder:
                            return EvalResult.failed(count, FailureKind.TAMPERED, "its process left a folder "
                                                     "that could not be removed", time.perf_counter() - start)
                    process, _ = self.processes.process_for((job.task, job.program), keep=self.limits.jit,
                                                            warm=("task", job.task))
                    failed = self._load(process, job, deadline, count, start)
                    if failed is not None:
                        return failed
                instance = instances[index]
                process.send(("instance", instance, None), deadline)
                record = process.receive(deadline, self.bound(task, instance))
                if record is None:
                    died = process.died()
                    self.processes.drop(process)
                    return EvalResult.failed(count, FailureKind.WORKER_DIED, f"{died} during the evaluation",
                                             time.perf_counter() - start)
                if record.compiled is not None and not self.limits.jit:  # only its own process can have said so
                    self.processes.drop(process)
                    return EvalResult.failed(count, FailureKind.TAMPERED, "its process said an instance ran on "
                                             "the compiled path, which was not asked for", time.perf_counter() - start)
                compiled.append(record.compiled)
                note = record.note or note
                try:
                    if record.status != DONE:
                        raise _Failure(KINDS.get(record.status, FailureKind.ERROR), record.reason)
                    metrics[k] = self.score(task, instance, record)
                    # checked on the path its process said it ran (compiled decisions may break ties otherwise)
                    originals.append((index, record.decisions, bool(record.compiled)))
                except (_Failure, HeuristicError) as exc:
                    kind, reason = (exc.kind, exc.reason) if isinstance(exc, _Failure) else \
                        (FailureKind.HEURISTIC, printable(str(exc)))
                    reasons[k] = reason
                    first = first or (kind, reason)
                    if job.stop_on_failure or kind == FailureKind.MEMORY:
                        for rest in range(k + 1, count):
                            reasons[rest] = "not evaluated: an earlier instance failed"
                        break
        except TimeoutError:
            self.processes.drop(process)
            return EvalResult.failed(count, FailureKind.TIMEOUT, f"timed out after {job.timeout:g} s",
                                     time.perf_counter() - start)
        except Malformed as exc:
            self.processes.drop(process)
            return EvalResult.failed(count, FailureKind.TAMPERED, f"the program's process sent a malformed "
                                     f"answer ({exc})", time.perf_counter() - start)
        except OSError as exc:  # a broken pipe: the process is gone
            died = process.died()
            self.processes.drop(process)
            return EvalResult.failed(count, FailureKind.WORKER_DIED, printable(f"{died} during the evaluation "
                                     f"({exc.strerror or exc})"), time.perf_counter() - start)
        if process is None:  # a job of no instances
            return EvalResult((), (), time.perf_counter() - start)
        if not self.limits.jit or (first is not None and first[0] in FailureKind.REPEATING):
            self.processes.drop(process)
        if process.left_folder:
            return EvalResult.failed(count, FailureKind.TAMPERED, "its process left a folder that could not be removed",
                                     time.perf_counter() - start)
        unchecked = 0
        if first is None:
            looked = looks_ahead(self, task, job, instances, originals, deadline_of(check_budget(job.timeout)))
            if looked == UNCHECKED:
                unchecked = 1
            elif looked is not None:
                return EvalResult.failed(count, looked[0], looked[1], time.perf_counter() - start)
        seconds = time.perf_counter() - start
        asked = [c for c in compiled if c is not None]
        is_compiled = None if not self.limits.jit else (bool(asked) and all(asked))
        if first is None:
            return EvalResult(tuple(metrics), tuple(reasons), seconds, compiled=is_compiled, fallback=note,
                              unchecked=unchecked)
        return EvalResult(tuple(metrics), tuple(reasons), seconds, first[0], first[1], compiled=is_compiled,
                          fallback=note)

    def _load(self, process, job, deadline, count: int, start: float) -> EvalResult | None:
        """The job's program loaded in ``process``: ``None``, or the job's failed result (the process dropped)."""
        process.send(("program", job.task, job.program, AS_THE_JOB), deadline)
        record = process.receive(deadline, 0)
        if record is not None and record.status == DONE:
            return None
        if record is None:
            died = process.died()
            self.processes.drop(process)
            return EvalResult.failed(count, FailureKind.WORKER_DIED, f"{died} while loading the program",
                                     time.perf_counter() - start)
        self.processes.drop(process)
        return EvalResult.failed(count, KINDS.get(record.status, FailureKind.PROGRAM), record.reason,
                                 time.perf_counter() - start)

    def bound(self, task, instance) -> int:
        """The most decisions ``instance`` can take (what an answer may carry)."""
        bound = getattr(task, "decision_bound", None)  # host adapters have none
        try:
            return min(int(bound(instance)), _DECISIONS_BOUND) if callable(bound) else _DECISIONS_BOUND
        except Exception:  # noqa: BLE001 - a task's own method failing: the generous bound
            return _DECISIONS_BOUND

    def metric(self, task, spec, instance, alone: bool = False) -> float:
        """The metric of program ``spec`` on one instance (the inner search's evaluations), in the
        process kept for the program's searches (they run in Python), or, ``alone``, in one of its
        own (dropped after it, as a run's instance's is); raises ``HeuristicError`` where the program
        fails, ``MemoryError`` past its memory cap."""
        reference = _task_reference(task)
        process, known = self.processes.process_for(("search", reference, spec), keep=not alone,
                                                    warm=("task", reference))
        try:
            if not known:
                process.send(("program", reference, spec, False))
                record = process.receive(None, 0)
                if record is None or record.status != DONE:
                    self.processes.drop(process)
                    self._fail(record)
            process.send(("instance", instance, None))
            record = process.receive(None, self.bound(task, instance))
        except Malformed as exc:
            self.processes.drop(process)
            raise HeuristicError(f"the program's process sent a malformed answer ({exc})") from None
        except OSError:
            self.processes.drop(process)
            raise HeuristicError("the program's process died during the evaluation") from None
        if alone or record is None or record.status != DONE:
            self.processes.drop(process)
        if record is None or record.status != DONE:
            self._fail(record)
        if process.left_folder:
            raise HeuristicError("its process left a folder that could not be removed")
        return self.score(task, instance, record)

    def host_score(self, evaluation, code: str, name: str) -> float | None:
        """A host ``Evaluation``'s own ``evaluate_program`` of ``code`` in a fresh program process:
        its score as a float (computed there: such an evaluation cannot be replayed), ``None``
        where it returned None; ``HeuristicError`` / ``MemoryError`` where it failed."""
        process = self.processes.start(warm=("module", type(evaluation).__module__))
        try:
            process.send(("host", evaluation, code, name))
            record = process.receive(None, 0)
        except Malformed as exc:
            raise HeuristicError(f"the program's process sent a malformed answer ({exc})") from None
        except OSError:
            record = None
        finally:
            process.close()
            reap_orphans()
        if record is None:
            raise HeuristicError(f"{process.died()} during the evaluation")
        if record.status == HEURISTIC and record.reason == "the evaluation returned None":
            return None
        if record.status != DONE:
            self._fail(record)
        return record.metric

    @staticmethod
    def _fail(record: Record | None):
        if record is None:
            raise HeuristicError("the program's process died during the evaluation")
        if record.status == MEMORY:
            raise MemoryError(record.reason)
        raise HeuristicError(record.reason)


def deadline_of(seconds: float | None) -> float | None:
    return None if seconds is None else time.perf_counter() + float(seconds)


class _Failure(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _task_reference(task) -> str:
    try:
        return reference_of(task)
    except Exception:  # noqa: BLE001 - a task known by name only
        return task.name


def evaluate_heuristic(task, priority, instance) -> float:
    """``task.evaluate(priority, instance)``, except that a program (``SourcePriority``) evaluated
    in a worker runs in a program process of its own and is scored by the judge; a metric that is not
    finite is a ``HeuristicError`` either way (``finite_metric``)."""
    judge = current_judge()
    if judge is not None and isinstance(priority, SourcePriority):
        return judge.metric(task, priority.spec, instance, alone=priority.alone)
    return finite_metric(float(task.evaluate(priority, instance)))


def finite_metric(metric: float) -> float:
    """``metric``, what the task's ``evaluate`` gave, where it is finite; else a ``HeuristicError`` saying
    that the task gave it (an infinite or NaN metric scores no heuristic, the task's rules' neither)."""
    if not math.isfinite(metric):
        raise HeuristicError(f"the task returned a non-finite metric ({metric})")
    return metric
