"""Compare's queue of jobs: ``run_jobs`` keeps as many jobs under way as their place has slots,
prints one line when a job starts and one when it ends, and hands each outcome to a follow-up
that may queue more jobs (a finished training run queues the evaluation of its best program)."""
from __future__ import annotations

import concurrent.futures as cf
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable

from raise_plugin.errors import UserError
from raise_plugin.harness.job_place import JobPlace

__all__ = ["JobRecord", "run_jobs"]


@dataclass
class JobRecord:
    """What happened to one job: ``status`` is ``done`` or ``failed``; ``seconds`` is wall time
    from its start to its end as the client saw it, ``work`` the job's own time."""

    name: str
    kind: str
    label: str
    status: str
    seconds: float
    work: float | None = None
    host: str = ""
    error: str = ""
    outcome: object = field(default=None, repr=False)
    retry_helps: bool = True  # False for a failure the job's settings or task cause (a ``UserError``)


def run_jobs(place: JobPlace, jobs: Iterable, then: Callable[[object, object], list] | None = None,
             say: Callable[[str], None] = print, planned: int | None = None,
             follows: Callable[[object], int] = lambda job: 0) -> list[JobRecord]:
    """Run ``jobs`` (and the jobs ``then(job, outcome)`` adds) at ``place``, ``place.slots`` at
    a time, in the order given; one line per job started and per job ended. A failed job is
    recorded and the others go on. ``planned`` counts the jobs ``then`` is expected to add too,
    ``follows(job)`` of them for ``job``: a job that fails, or adds fewer, takes those it did not
    add off the count the lines show."""
    pending = deque(jobs)
    total = planned if planned is not None else len(pending)
    running: dict[cf.Future, tuple[int, object, float]] = {}
    records: list[JobRecord] = []
    started_count = 0

    def width() -> int:
        return len(str(max(total, started_count)))

    interrupted = True
    try:
        while pending or running:
            while pending and len(running) < place.slots:
                job = pending.popleft()
                started_count += 1
                total = max(total, started_count)
                say(f"[{started_count:>{width()}}/{total}] started  {job.kind} {job.label}")
                begun = time.time()
                future = place.submit(job)
                running[future] = (started_count, job, begun)
            done, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f][0]):
                number, job, begun = running.pop(future)
                seconds = time.time() - begun
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - one job's failure does not stop the others
                    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    records.append(JobRecord(job.name, job.kind, job.label, "failed", seconds, error=message,
                                             retry_helps=getattr(exc, "retry_helps", not isinstance(exc, UserError))))
                    total -= follows(job)
                    say(f"[{number:>{width()}}/{total}] FAILED   {job.kind} {job.label} after {seconds:.1f} s: "
                        f"{message}")
                    continue
                records.append(JobRecord(job.name, job.kind, job.label, "done", seconds,
                                         getattr(outcome, "seconds", None), getattr(outcome, "host", ""),
                                         outcome=outcome))
                where = f" on {outcome.host}" if place.kind == "dask" and getattr(outcome, "host", "") else ""
                say(f"[{number:>{width()}}/{total}] finished {job.kind} {job.label} in {seconds:.1f} s{where}: "
                    f"{outcome.summary()}")
                follow = list(then(job, outcome) or ()) if then is not None else []
                total -= max(0, follows(job) - len(follow))
                pending.extend(follow)
        interrupted = False
    finally:
        place.close(interrupted=interrupted)
    return records
