"""The look-ahead check: a program's decisions on an instance may not depend on the part of it
still to come. The program runs again, in a fresh process, on a copy whose part after a random
point is replaced; up to the last decision whose arguments are the same on both, its decisions
must be the same."""
from __future__ import annotations

import zlib

import numpy as np

from .jobs import checksum
from .protocol import DONE, STOPPED, Malformed

__all__ = ["looks_ahead", "same_inputs"]


def looks_ahead(judge, task, job, instances: list, decided: list, deadline: float | None) -> str | None:
    """With probability ``judge.limits.foresight``, one instance of the job checked for look-ahead:
    the program runs again, in a fresh process that never saw the instance, on a copy whose
    part after a random point is replaced; up to the last decision whose arguments are the
    same on both, its decisions must be the same. Why not, or ``None``."""
    if not decided or judge.limits.foresight <= 0:
        return None
    # drawn from what the job is (the program, the instances' contents), not from the set's random id:
    # the same program on the same instances is checked the same way in every run
    seed = zlib.crc32(repr((job.task, job.program.code, job.program.baseline, job.indices,
                            [checksum(instances[i]) for i in job.indices])).encode())
    rng = np.random.default_rng(seed)
    if rng.random() >= judge.limits.foresight:
        return None
    index, decisions = decided[int(rng.integers(len(decided)))]
    instance = instances[index]
    probe = task.future_replaced(instance, rng)
    if probe is None:
        return None
    same = same_inputs(task, instance, probe, decisions)
    if same == 0:
        return None
    try:
        process = judge.processes.start()
    except OSError:  # no process to check in (the machine's limit): no verdict, the run itself was valid
        return None
    try:
        process.send(("program", job.task, job.program, False), deadline)
        record = process.receive(deadline, 0)
        if record is not None and record.status == DONE:
            process.send(("instance", probe, same), deadline)  # it need decide no further
            record = process.receive(deadline, judge.bound(task, probe))
        if record is None:
            return _otherwise(process.died())
    except TimeoutError:
        return _otherwise(f"it did not answer within {job.timeout:g} s")
    except Malformed as exc:
        return _otherwise(f"it sent a malformed answer ({exc})")
    except OSError as exc:  # a broken pipe: the process is gone
        return _otherwise(f"{process.died()} ({exc.strerror or exc})")
    finally:
        process.close()
    # the copy's first `same` decisions have the arguments of the job's: a program that decides from
    # the past alone answers them as it did, so failing, leaving or answering fewer is its own doing
    if record.status not in (DONE, STOPPED):
        return _otherwise(record.reason or "it failed")
    if record.decisions.size < same:
        return _otherwise(f"it answered {record.decisions.size} of the {same} decisions asked")
    differ = np.flatnonzero(record.decisions[:same] != decisions[:same])
    if differ.size == 0:
        return None
    # the quick digests may have missed a difference of the arguments: count exactly before judging
    if int(differ[0]) >= same_inputs(task, instance, probe, decisions[: int(differ[0]) + 1], exact=True):
        return None
    return (f"the program looks ahead: its decision {int(differ[0])} changed when only the part of the "
            f"instance still to come changed (checked on instance {index})")


def _otherwise(what: str) -> str:
    return f"the program behaved otherwise when checked for look-ahead: {what}"


class _Diverged(Exception):
    """The arguments of a decision differ from the reference run's."""


class _Inputs:
    """Recorded decisions standing in for a program, keeping a digest of the arguments each
    decision was given; stops at the first digest that differs from ``reference``'s. ``exact``:
    the digest is a CRC-32 of the arguments' bytes; otherwise a quick one (the first argument's
    CRC-32, the second's shape and sum), which may miss a difference, never invent one."""

    def __init__(self, decisions: np.ndarray, reference: list | None = None, exact: bool = False):
        self.decisions, self.reference, self.exact, self.digests = decisions.tolist(), reference, exact, []

    def __call__(self, first, second):
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


def same_inputs(task, instance, probe, decisions: np.ndarray, exact: bool = False) -> int:
    """How many of ``decisions`` are given the same arguments on ``probe`` as on ``instance``
    (``exact``: for sure; otherwise at least that many may be, a bound the exact count checks)."""
    on_probe = _Inputs(decisions, exact=exact)
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
