"""The look-ahead check: a program's decisions on an instance may not depend on the part of it
still to come. The program runs again, in a fresh process, on a copy whose part still to come is
replaced: after one random point (``Task.future_replaced``), or, where the task stages it
(``Task.future_stages``), after each of many stage ends, the true part up to the next end being
revealed only once the decisions before it are answered (in the copy's run in progress, or by
starting it again, ``stages``). Up to the last decision whose arguments are the same on both,
its decisions must be the same. The copy runs on the path the instance ran: compiled (compiled at
once in the check's process, where the program compiles) or in Python."""
from __future__ import annotations

import copy
import zlib

import numpy as np

from .one_cpu import on_one_cpu
from .protocol import COMPILED, DONE, Malformed, PYTHON, STAGE, STOPPED
from .stages import apply_patch

__all__ = ["looks_ahead", "same_inputs", "check_budget", "UNCHECKED"]

UNCHECKED = "unchecked"  # the check could not run for a reason outside the program (no process to run it in)
_RAN_OUT = "ran out of time"


def check_budget(timeout: float | None) -> float | None:
    """The check's own time limit, from the job's: the copy runs no more of the program than the
    job's instance did, so twice the job's limit and a second for its process's start leave it
    the room the job had, on a machine twice as busy (a check that ran out of the job's own limit
    called an honest program near its limit a look-ahead)."""
    return None if timeout is None else 2.0 * float(timeout) + 1.0


def looks_ahead(judge, task, job, instances: list, decided: list, deadline: float | None):
    """With probability ``judge.limits.foresight``, one instance of the job checked for look-ahead
    (see the module), by ``deadline`` (``check_budget``): ``None`` where it passed or was not
    drawn, ``UNCHECKED`` where no process could be started for it, else ``(kind, reason)``: a
    look-ahead or a copy that behaved otherwise (``foresight``), a check past its own limit
    (``timeout``)."""
    if not decided or judge.limits.foresight <= 0:
        return None
    # drawn from the operating system's entropy here, in the worker, when the job is done: nothing
    # the program could read or compute tells it which job is checked, or where
    rng = np.random.default_rng()
    if rng.random() >= judge.limits.foresight:
        return None
    index, decisions, compiled = decided[int(rng.integers(len(decided)))]
    instance = instances[index]
    staged = _staging(task, instance, rng, decisions)
    if staged is None:
        return None
    start, stages, horizon = staged
    decisions = decisions[:horizon]  # none beyond can have the instance's arguments
    restarts = bool(stages) and not getattr(task, "stages_in_place", False)
    # a staged copy shares every argument up to the horizon by its construction (each part is
    # revealed before the first decision that knows it; ``Task.future_stages``): it is counted
    # exactly below, only where a decision differs; a copy cut once is counted here, quickly, first
    same = len(decisions) if stages else same_inputs(task, instance, start, decisions)
    if same == 0:
        return None
    with on_one_cpu(judge.processes):  # its many round trips, each on one CPU (``one_cpu``)
        try:
            process = judge.processes.start()
        except (OSError, RuntimeError):  # the machine's limits (the program can reach no other process's):
            return UNCHECKED              # counted and shown as unchecked, never silently valid
        try:
            differ, why = _copy_decides(judge, task, job, process, (start, stages, compiled), same, decisions,
                                        deadline)
        finally:
            process.close()
    if why is _RAN_OUT:
        return "timeout", f"its look-ahead check ran past its own limit ({check_budget(job.timeout):g} s)"
    if process.left_folder:
        return "tampered", "its process left a folder that could not be removed"
    if why is not None:
        return "foresight", _otherwise(why)
    if differ is None:
        return None
    # the quick digests may have missed a difference of the arguments: count exactly before judging
    if restarts:
        if not _same_when_restarted(task, instance, start, stages, decisions, differ):
            return None
    elif differ >= same_inputs(task, instance, start, decisions[: differ + 1], exact=True, stages=stages):
        return None
    return "foresight", (f"the program looks ahead: its decision {differ} changed when only the part of the "
                         f"instance still to come changed (checked on instance {index})")


def _staging(task, instance, rng, decisions):
    """``(start, stages, horizon)`` of the check on ``instance`` (``decisions``, the program's
    there): the task's stages, or one cut, no stage and no horizon."""
    try:
        staged = getattr(task, "future_stages", None)
        staged = staged(instance, rng, decisions) if callable(staged) else None
        if staged is not None:
            return staged
        probe = task.future_replaced(instance, rng)
    except Exception:  # noqa: BLE001 - a task's own method failing: no check, the program did nothing wrong
        return None
    return None if probe is None else (probe, [], None)


def _copy_decides(judge, task, job, process, copy, same: int, decisions, deadline):
    """Run the copy (``(start, stages, compiled)``: compiled where the instance's process said it
    ran so, and the program compiles; else in Python): ``(the first decision that differs from
    ``decisions`` among the first ``same``, or None; why the copy failed, or None)``. The copy's
    first ``same`` decisions have the arguments of the job's: a program that decides from the past
    alone answers them as it did, so failing, leaving, stopping or answering short is its own doing."""
    start, stages, compiled = copy
    ends = [end for end, _ in stages if end < same]
    bound = judge.bound(task, start)
    try:
        process.send(("program", job.task, job.program, COMPILED if compiled else PYTHON), deadline)
        record = process.receive(deadline, 0)
        if record is not None and record.status == DONE:
            process.send(("staged", start, ends, same), deadline)  # it need decide no further than `same`
            answered = 0
            for (end, patch) in stages[:len(ends)]:
                record = process.receive(deadline, bound)
                if record is None or record.status != STAGE:
                    break
                got = record.decisions
                if answered + got.size != end:
                    return None, f"it answered a stage's end at decision {answered + got.size}, not {end}"
                changed = np.flatnonzero(got != decisions[answered:end])
                if changed.size:
                    return answered + int(changed[0]), None
                answered = end
                process.send(("reveal", patch), deadline)
            else:
                record = process.receive(deadline, bound)
        if record is None:
            return None, process.died()
    except TimeoutError:
        return None, _RAN_OUT
    except Malformed as exc:
        return None, f"it sent a malformed answer ({exc})"
    except OSError as exc:  # a broken pipe: the process is gone
        return None, f"{process.died()} ({exc.strerror or exc})"
    if record.status not in (DONE, STOPPED):
        return None, record.reason or "it answered a stage's end where there was none"
    if record.decisions.size < same:
        return None, f"it answered {record.decisions.size} of the {same} decisions asked"
    changed = np.flatnonzero(record.decisions[:same] != decisions[:same])
    return (int(changed[0]) if changed.size else None), None


def _otherwise(what: str) -> str:
    return f"the program behaved otherwise when checked for look-ahead: {what}"


class _Diverged(Exception):
    """The arguments of a decision differ from the reference run's."""


class _Inputs:
    """Recorded decisions standing in for a program, keeping a digest of the arguments each
    decision was given; stops at the first digest that differs from ``reference``'s. ``exact``:
    the digest is a CRC-32 of the arguments' bytes; otherwise a quick one (the first argument's
    CRC-32, the second's shape and sum), which may miss a difference, never invent one."""

    def __init__(self, decisions: np.ndarray, reference: list | None = None, exact: bool = False, stages=(),
                 instance=None):
        self.decisions, self.reference, self.exact, self.digests = decisions.tolist(), reference, exact, []
        self.stages, self.instance = list(stages), instance  # the instance the stages reveal into

    def __call__(self, first, second):
        scores = self._decide(first, second)
        made = len(self.digests)
        while self.stages and self.stages[0][0] == made:  # the copy's next part, as its process gets it
            apply_patch(self.instance, self.stages.pop(0)[1])
        return scores

    def _decide(self, first, second):
        k = len(self.digests)
        if k >= len(self.decisions):
            raise _Diverged
        second = np.ascontiguousarray(second)
        head = zlib.crc32(np.ascontiguousarray(first), second.shape[0])
        digest = zlib.crc32(second, head) if self.exact else (head, second.shape, second.sum().item())
        if self.reference is not None and (k >= len(self.reference) or self.reference[k] != digest):
            raise _Diverged
        self.digests.append(digest)
        choice = self.decisions[k]
        if not 0 <= choice < second.shape[0]:
            raise _Diverged
        scores = np.zeros(second.shape[0], dtype=np.int8)
        scores[choice] = 1
        return scores


def _same_when_restarted(task, instance, start, stages, decisions: np.ndarray, differ: int) -> bool:
    """Whether every decision up to ``differ`` has, on the copy (``start`` revealed in ``stages``,
    each reveal starting its run again), exactly the arguments it has on ``instance``: in each of
    the copy's states, every decision up to the last one it was asked there (or ``differ``)."""
    original = _Inputs(decisions[: differ + 1], exact=True)
    try:
        task.evaluate(original, instance)
    except Exception:  # noqa: BLE001 - out of decisions
        pass
    probe = copy.deepcopy(start)  # the stages write into it
    lasts = [end for end, _ in stages] + [len(decisions)]
    for state, last in enumerate(lasts):
        if state:
            apply_patch(probe, stages[state - 1][1])
        upto = min(last, differ + 1)
        replayed = _Inputs(decisions[:upto], original.digests, exact=True)
        try:
            task.evaluate(replayed, probe)
        except Exception:  # noqa: BLE001 - out of decisions, or the first argument that differs
            pass
        if len(replayed.digests) < upto:
            return False
        if upto == differ + 1:
            return True
    return False


def same_inputs(task, instance, probe, decisions: np.ndarray, exact: bool = False, stages=()) -> int:
    """How many of ``decisions`` are given the same arguments on ``probe`` (revealed in
    ``stages``, as the check's copy is) as on ``instance`` (``exact``: for sure; otherwise at
    least that many may be, a bound the exact count checks)."""
    probe = copy.deepcopy(probe) if stages else probe  # the stages write into it
    on_probe = _Inputs(decisions, exact=exact, stages=stages, instance=probe)
    try:
        task.evaluate(on_probe, probe)
    except Exception:  # noqa: BLE001 - out of decisions, or one that is no candidate there
        pass
    original = _Inputs(decisions, on_probe.digests, exact=exact)
    try:
        task.evaluate(original, instance)
    except Exception:  # noqa: BLE001 - the first argument that differs ends it
        pass
    return len(original.digests)
