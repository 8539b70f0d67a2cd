"""Online non-delay dispatching for OJSP (SPEC 3.2) and the normalised makespan.

A job is visible from its release time r_j. Each unfinished job's next operation
has the earliest start ``est = max(machine_free, job_ready)``, where ``job_ready``
is r_j before the first operation and the end of the previous operation after.
The decision time is ``t = min est`` over all unfinished jobs (so when nothing is
released, t jumps to the next release); the candidates are the next operations
with ``est == t``, every one of them released, listed in job-index order. The
heuristic scores them, the first argmax starts at t, and the remaining candidates
on other machines are offered again at the same t (no operation can join them:
every start pushes some est beyond t). One heuristic call per operation.

The loop keeps one heap key ``est * J + job`` per unfinished job. An est only grows,
so entries are refreshed lazily when they reach the top of the heap; the
candidate rows come from a table of all operations precomputed per instance.
A ``Recorder`` or a ``Replay`` (``tasks.common.decision``) as ``priority`` records or
replays the decisions (one per call, a call even when one candidate is left), on either loop.
"""
from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Callable

import numpy as np

from tasks.common.decision import decide, run_compiled

try:  # the same loop compiled (setup.py builds it where a C compiler is available)
    from . import _fastdispatch
except ImportError:  # pragma: no cover - depends on the build
    _fastdispatch = None

from .instances import lower_bound

__all__ = ["COLUMNS", "candidate_table", "simulate", "normalised_makespan"]

COLUMNS = ("machine_id", "duration", "release_time", "due_date", "remaining_work", "remaining_operations")


def candidate_table(instance: dict) -> np.ndarray:
    """Rows (J * M, 6) in the order of ``COLUMNS``; row ``j * M + k`` is job j's k-th operation."""
    durations = np.asarray(instance["durations"], dtype=np.int64)
    J, M = durations.shape
    table = np.empty((J, M, len(COLUMNS)), dtype=np.float64)
    table[:, :, 0] = instance["machines"]
    table[:, :, 1] = durations
    table[:, :, 2] = np.asarray(instance["release"])[:, None]
    table[:, :, 3] = np.asarray(instance["due"])[:, None]
    table[:, :, 4] = np.cumsum(durations[:, ::-1], axis=1)[:, ::-1]  # this operation included
    table[:, :, 5] = np.arange(M, 0, -1)  # this operation included
    return table.reshape(J * M, len(COLUMNS))


def simulate(instance: dict, priority: Callable, *, return_schedule: bool = False, compiled: bool = True):
    """Dispatch every operation online with ``priority``; return the makespan C_max.

    With ``return_schedule=True`` return ``(C_max, start)``, ``start[j, k]`` the start
    time of job j's k-th operation. Raises ``HeuristicError`` when the heuristic raises
    or returns scores that do not pick exactly one candidate. With ``compiled`` (and the
    module built) the loop runs in C, handing the heuristic the same arguments.
    ``priority`` may be a ``Recorder`` or a ``Replay`` (one decision per operation).
    """
    durations = np.ascontiguousarray(instance["durations"], dtype=np.int64)
    J, M = durations.shape
    table = candidate_table(instance)
    if compiled and _fastdispatch is not None:
        start = np.zeros(J * M, dtype=np.int64)
        makespan = run_compiled(_fastdispatch.dispatch, (
            np.ascontiguousarray(instance["machines"], dtype=np.int64), durations,
            np.ascontiguousarray(instance["release"], dtype=np.int64), table, start), priority, J * M)
        return (makespan, start.reshape(J, M)) if return_schedule else makespan
    makespan, start = _simulate_python(instance, durations, table, priority)
    if return_schedule:
        return makespan, np.array(start, dtype=np.int64).reshape(J, M)
    return makespan


def _simulate_python(instance: dict, durations: np.ndarray, table: np.ndarray, priority: Callable):
    """The dispatching loop in Python: ``(C_max, start)``, ``start`` flat (row ``j * M + k``)."""
    J, M = durations.shape
    take = table.take
    op_machine = np.asarray(instance["machines"], dtype=np.int64).ravel().tolist()
    op_duration = durations.ravel().tolist()
    op_job = [op // M for op in range(J * M)]
    # the machine of the job's following operation, -1 after its last one
    then_machine = [-1 if (op + 1) % M == 0 else op_machine[op + 1] for op in range(J * M)]
    job_ready = np.asarray(instance["release"], dtype=np.int64).tolist()
    next_op = [j * M for j in range(J)]  # flat index of each job's next operation
    machine_free = [0] * M
    start = [0] * (J * M)
    # one heap key per unfinished job, est * J + j: ordered by est, then job index
    heap = [r * J + j for j, r in enumerate(job_ready)]  # est = r_j while every machine is free
    heapify(heap)
    makespan = 0

    while heap:
        t, ops = _decision_time(heap, J, next_op, job_ready, machine_free, op_machine)
        while ops:
            rows = take(ops, axis=0)
            n = len(ops)
            choice = decide(priority, t, rows, n)

            op = ops[choice]
            m = op_machine[op]
            end = t + op_duration[op]
            start[op] = t
            machine_free[m] = end
            j = op_job[op]
            following = then_machine[op]
            if following >= 0:
                next_op[j] = op + 1
                job_ready[j] = end
                free = machine_free[following]
                heappush(heap, (end if end > free else free) * J + j)
            elif end > makespan:
                makespan = end
            if n == 1:
                break
            # candidates on the same machine now wait until `end`; the others stay at t
            rest = []
            for other in ops:
                if op_machine[other] == m:
                    if other != op:
                        heappush(heap, end * J + op_job[other])
                else:
                    rest.append(other)
            ops = rest
    return makespan, start


def _decision_time(heap: list, J: int, next_op: list, job_ready: list, machine_free: list,
                   op_machine: list) -> tuple[int, list]:
    """The decision time t (the smallest est, stale heap keys refreshed on the way) and the next
    operations whose est is t, in job-index order; their keys leave the heap."""
    while True:
        key = heappop(heap)
        j = key % J
        op = next_op[j]
        est = job_ready[j]
        free = machine_free[op_machine[op]]
        if free > est:
            est = free
        if est * J + j == key:
            break
        heappush(heap, est * J + j)
    t = est
    bound = (t + 1) * J  # keys below it have est == t
    ops = [op]
    while heap and heap[0] < bound:
        j = heappop(heap) % J
        op = next_op[j]
        est = job_ready[j]
        free = machine_free[op_machine[op]]
        if free > est:
            est = free
        if est == t:
            ops.append(op)
        else:
            heappush(heap, est * J + j)
    return t, ops


def normalised_makespan(makespan: int, instance: dict) -> float:
    """C_max / LB with LB = max(max_j P_j, ceil(sum p / M))."""
    return makespan / lower_bound(instance["durations"], instance["num_machines"])
