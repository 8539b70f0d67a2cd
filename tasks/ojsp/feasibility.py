"""Checks that a schedule produced by the simulator is a feasible, non-delay job-shop schedule."""
from __future__ import annotations

import numpy as np

__all__ = ["schedule_problems", "check_schedule"]


def schedule_problems(instance: dict, start, makespan: int | None = None, *, non_delay: bool = True) -> list[str]:
    """Every way ``start`` (start[j, k] of job j's k-th operation) breaks the rules; empty when feasible.

    Checked: one integer start per operation; no job starts before its release; each
    operation starts after its job's previous one ends; no two operations overlap on a
    machine; the makespan recomputes from the starts. With ``non_delay``, also that every
    operation starts the moment its job or its machine became ready (release, the end of
    the job's previous operation, or the end of an operation on its machine).
    """
    machines = np.asarray(instance["machines"], dtype=np.int64)
    durations = np.asarray(instance["durations"], dtype=np.int64)
    release = np.asarray(instance["release"], dtype=np.int64)
    J, M = durations.shape
    start = np.asarray(start)
    problems: list[str] = []
    if start.shape != (J, M):
        return [f"start times have shape {start.shape}, expected ({J}, {M}): not every operation scheduled once"]
    if start.dtype.kind not in "iu":
        return [f"start times have dtype {start.dtype}, expected integers"]
    if (np.sort(machines, axis=1) != np.arange(M)).any():
        problems.append("some job does not visit every machine exactly once")
    end = start + durations

    early = np.flatnonzero(start[:, 0] < release)
    if early.size:
        problems.append(f"{early.size} job(s) start before release, first job {early[0]}")
    order = np.argwhere(start[:, 1:] < end[:, :-1])
    if order.size:
        j, k = order[0]
        problems.append(f"{len(order)} precedence violation(s), first job {j} operation {k + 1}")

    flat_machine, flat_start, flat_end = machines.ravel(), start.ravel(), end.ravel()
    by_machine = np.lexsort((flat_start, flat_machine))
    same = flat_machine[by_machine][1:] == flat_machine[by_machine][:-1]
    overlap = same & (flat_start[by_machine][1:] < flat_end[by_machine][:-1])
    if overlap.any():
        first = by_machine[1:][overlap][0]
        problems.append(f"{int(overlap.sum())} machine overlap(s), first on machine {flat_machine[first]}")

    recomputed = int(end.max())
    if makespan is not None and int(makespan) != recomputed:
        problems.append(f"makespan {makespan} does not match the schedule's {recomputed}")

    if non_delay:
        ready = np.concatenate([release[:, None], end[:, :-1]], axis=1).ravel()
        ends_on = {m: set(flat_end[flat_machine == m].tolist()) for m in range(M)}
        idle = [i for i in range(J * M)
                if flat_start[i] != ready[i] and flat_start[i] not in ends_on[flat_machine[i]]]
        if idle:
            j, k = divmod(idle[0], M)
            problems.append(f"{len(idle)} operation(s) start later than their job and machine allow, "
                            f"first job {j} operation {k}")
    return problems


def check_schedule(instance: dict, start, makespan: int | None = None, *, non_delay: bool = True) -> None:
    """Raise ``ValueError`` listing every problem of the schedule."""
    problems = schedule_problems(instance, start, makespan, non_delay=non_delay)
    if problems:
        raise ValueError("infeasible schedule: " + "; ".join(problems))
