"""A sandboxed worker process: it isolates itself, forks its judge's spawner, then answers the
engine's messages one at a time: instance sets (``("set", id, version, instances)``), kept by
id; jobs (``("job", Job)``), judged (``judge``); and plain calls (``("call", fn, args, kwargs)``).
It never runs a program's code itself: its program processes do.
"""
from __future__ import annotations

import collections
import os
import signal
import sys
import tempfile
from multiprocessing.reduction import ForkingPickler
from typing import Any

from tasks.common.errors import printable

from ..compiled import warm_compiler
from ..jobs import Job, freeze_instances
from ..judge import Judge
from ..limits import SandboxLimits, keep_environment
from ..results import EvalResult, FailureKind
from ..role import set_judge
from ..sandbox import PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG, cap_memory, one_thread_per_pool, prctl
from ..sandbox.confine import confine
from ..sandbox.sinks import install_sinks, sinks
from .carried import take_over

__all__ = ["worker_main", "confinement"]

confinement: list[str] = []  # the kernel's part of this worker's sandbox (``confine.confine``)


def _enter_sandbox(limits: SandboxLimits, workdir: str, parent: int, method: str = "fork",
                   carried: dict | None = None) -> None:
    """Isolate this process; called first thing in a new worker. The worker runs no program (its
    program processes do, see ``judge``), so the limits meant for a program (processes, file
    size, the audit hook, seccomp) are applied there; the worker keeps the kernel's part and,
    once its spawner is forked, a memory cap of its own (an inner search that balloons fails
    with ``MemoryError``)."""
    try:
        os.setsid()  # own session and process group: killpg reaches every descendant
    except (OSError, AttributeError):  # AttributeError: no sessions on this platform
        pass
    prctl(PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # die with the process that started us
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphaned grandchildren come back to us
    if method == "fork" and os.getppid() != parent:  # the engine died meanwhile
        os._exit(0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the engine's business
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # ignored by the fork server only (cleanstart._prepare_server)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails with EFBIG instead
    keep_environment(os.environ)
    one_thread_per_pool()  # before the spawner is forked: no program process inherits a pool of many
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdin = open(os.devnull)
    install_sinks(None if limits.output_mb is None else limits.output_mb * 2 ** 20)
    os.chdir(workdir)
    if limits.jit:
        warm_compiler()  # once, here: every program process forked later has it loaded and started
    take_over(carried)
    if limits.confine:
        confinement[:] = confine(workdir, tuple((carried or {}).get("modules", {}).values()))
        prctl(PR_SET_PDEATHSIG, getattr(signal, "SIGKILL", 9))  # a change of user cleared it


def worker_main(conn, limits: SandboxLimits, workdir: str, parent: int, method: str = "fork",
                carried: dict | None = None) -> None:
    """The worker's loop (the target of the worker process). The worker is its jobs' judge: it
    never runs a program's code, it hands the program to a program process and scores the
    decisions that come back (``judge``); the calls it runs are the engine's own functions, whose
    evaluations of programs go through the judge too."""
    _enter_sandbox(limits, workdir, parent, method, carried)
    judge = Judge(limits, workdir)  # its spawner is forked now, before this process holds any instance
    cap_memory(limits.memory_mb)  # after the spawner: each program process takes its own budget
    set_judge(judge)
    sets: collections.OrderedDict[str, tuple[int, list]] = collections.OrderedDict()
    while True:
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):  # the engine is gone
            os._exit(0)
        try:
            message = ForkingPickler.loads(raw)  # the engine's own message (as ``conn.recv`` reads it)
        except BaseException as exc:  # noqa: BLE001 - e.g. a function this process cannot import or read
            conn.send(("raised", RuntimeError(f"the worker could not read the call: {exc}"), False))
            continue
        kind = message[0]
        if kind == "stop":
            os._exit(0)
        if kind == "set":
            _, set_id, version, instances = message
            freeze_instances(instances)
            sets[set_id] = (version, instances)
            sets.move_to_end(set_id)
            while len(sets) > limits.cache_sets:
                sets.popitem(last=False)
            continue
        for sink in sinks():
            sink.count = 0
        if kind == "job":
            job: Job = message[1]
            held = sets.get(job.set_id)
            if held is None or held[0] != job.version:
                conn.send(("need", job.set_id))
                continue
            conn.send(("started",))
            sets.move_to_end(job.set_id)
            reply: tuple[Any, ...] = ("result", _judged(judge, job, held[1]))
        else:  # "call"
            _, fn, args, kwargs = message
            conn.send(("started",))
            try:
                reply = ("value", fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - returned to the caller
                reply = ("raised", exc)
        if judge.processes.spawner_gone():
            # no program can run here any more: the worker ends unanswered, as if killed, so the engine
            # starts a fresh one and runs the job again there (a failure of every job until the run's end before)
            os._exit(1)
        try:
            conn.send(reply + (False,))
        except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable return value
            conn.send(("raised", RuntimeError(f"the result could not be sent back: {exc}"), False))


def _judged(judge: Judge, job: Job, instances: list) -> EvalResult:
    """The job's result; a failure of the judge's own (its clean-up, its spawner) is that job's,
    never the worker's, so that no other program loses its result."""
    try:
        return judge.run_job(job, instances)
    except Exception as exc:  # noqa: BLE001 - said as this job's failure
        return EvalResult.failed(len(job.indices), FailureKind.ERROR,
                                 printable(f"the judge failed on this job: {type(exc).__name__}: {exc}"))
