"""A program's process: forked by its worker's spawner, it confines itself (resource limits,
Landlock, seccomp, the audit hook), then runs the program on each instance the judge sends
and answers with its decisions as raw integers (``protocol``). It holds no instance set but
the one instance it is given, and never sees a score."""
from __future__ import annotations

import math
import os
import random
import signal
import sys
import tempfile
import time

import numpy as np

from raise_plugin.programs import ProgramError
from tasks import get_task
from tasks.common.decision import DecisionLimit, Recorder

from ..compiled import Compiler, load_compiler
from ..failures import classify, one_line
from ..limits import SandboxLimits
from ..results import FailureKind
from ..role import set_judge
from ..sandbox import (PR_SET_PDEATHSIG, HeldModules, audit_hook, cap_memory, close_other_descriptors, install_seccomp,
                       layer, prctl, set_limit)
from ..sandbox.sinks import sinks
from .protocol import (AS_THE_JOB, COMPILED, DONE, ERROR, HEURISTIC, MEMORY, PROGRAM, STOPPED, receive_request,
                       send_answer)
from .stages import StagedPriority

__all__ = ["program_main", "confine_program", "SEED"]

SEED = 0  # the global random generators' seed before every instance


def confine_program(workdir: str, limits: SandboxLimits) -> list[str]:
    """Everything that holds a program's process, in the order it must come; what was applied."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the spawner, which dies with the worker
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    compiler_dirs = load_compiler() if limits.jit else ()  # before the memory cap and the hook
    cap_memory(limits.memory_mb)
    if limits.file_mb is not None:
        set_limit("RLIMIT_FSIZE", int(limits.file_mb) * 1024 * 1024)
    set_limit("RLIMIT_CORE", 0)
    applied = []
    if limits.confine:
        applied += layer(workdir)  # a Landlock layer of its own: its directory only, not its siblings'
        # no process, thread, socket, IPC object, ptrace, signal or limit reaching another process,
        # and no change to a file's metadata: seccomp, whatever user the process runs as
        applied += install_seccomp(threads=limits.threads)
    if limits.max_processes is not None:
        set_limit("RLIMIT_NPROC", int(limits.max_processes))
    if limits.audit:
        sys.addaudithook(audit_hook(workdir, compiler_dirs))
    return applied


def program_main(requests: int, answers: int, workdir: str, limits: SandboxLimits) -> None:
    """A program's process: confine, then answer the judge's requests until it closes the pipe."""
    close_other_descriptors((requests, answers))
    os.setpgid(0, 0)  # a group of its own, killed whole with it
    set_judge(None)  # this process is no judge
    try:
        confine_program(workdir, limits)
    except BaseException as exc:  # noqa: BLE001 - said once, then this process ends
        reason = one_line(f"the program's process could not start: {type(exc).__name__}: {exc}")
        send_answer(answers, ERROR, reason=reason)
        os._exit(0)
    held = HeldModules()  # before any program ran here: the builtins and modules its task's code runs on
    compiler = None
    if limits.jit:
        compiler = Compiler(after=limits.jit_after, held=held)
    task = evaluate = priority = spec = verdict = None
    in_place = True
    while True:
        message = receive_request(requests)
        if message is None:
            os._exit(0)
        for sink in sinks():
            sink.count = 0
        if message[0] == "program":
            _, task_ref, spec, path = message
            if path != AS_THE_JOB:  # a look-ahead check's copy, on the path the instance checked ran
                compiler = Compiler(after=0.0, held=held) if path == COMPILED and limits.jit else None
            try:
                task = get_task(task_ref)
                evaluate = task.evaluate  # taken before the program's module code runs
                in_place = bool(getattr(task, "stages_in_place", False))
                verdict = compiler.ready(task, spec) if compiler is not None else None
            except BaseException as exc:  # noqa: BLE001 - said as the program's failure
                _refuse(answers, exc)
                continue
            priority = _fresh(answers, task, spec, held)
            if priority is not None:
                send_answer(answers, DONE)
        elif message[0] == "host":  # a host Evaluation's own evaluate_program: its score, not judged
            _, evaluation, code, name = message
            _answer_host(answers, evaluation, code, name, held)
        else:  # ("instance", instance, limit) or a staged look-ahead check's ("staged", copy, ends, limit)
            instance, limit = message[1], message[-1]
            if priority is None:  # every instance meets a fresh module: what one decided leaves nothing for the next
                priority = _fresh(answers, task, spec, held)
                if priority is None:
                    continue
            if message[0] == "staged":  # compiled where the check's copy is (``COMPILED``) and the program compiles
                deciding = verdict.function if verdict is not None and verdict.compiled else priority
                staged = StagedPriority(deciding, instance, message[2], requests, answers, in_place, held)
                _run_instance(answers, task, spec, staged.evaluating(evaluate), staged, instance, limit, None, None,
                              held)
            else:
                verdict = _run_instance(answers, task, spec, evaluate, priority, instance, limit, compiler, verdict,
                                        held)
            priority = None


def _fresh(answers: int, task, spec, held: HeldModules):
    """The program's function in a module of its own, just run; ``None`` once its failure is answered."""
    try:
        priority = spec.resolve(task)
    except BaseException as exc:  # noqa: BLE001 - a program's module code may raise anything
        if not _changed_modules(answers, held):  # a name it replaced may be why it failed
            _refuse(answers, exc)
        return None
    return None if _changed_modules(answers, held) else priority


def _changed_modules(answers: int, held: HeldModules) -> bool:
    """Whether the program replaced or removed a name of Python's builtins or of a module its task's code
    runs on (``HeldModules``): each put back, then said as its failure."""
    changed = held.put_back()
    if changed:
        send_answer(answers, PROGRAM, reason=one_line(changed))
    return bool(changed)


def _refuse(answers: int, exc: BaseException) -> None:
    if isinstance(exc, ProgramError):
        send_answer(answers, PROGRAM, reason=one_line(str(exc)))
        return
    kind, reason = classify(exc)
    send_answer(answers, MEMORY if kind == FailureKind.MEMORY else PROGRAM, reason=reason)


def _answer_host(answers: int, evaluation, code: str, name: str, held: HeldModules) -> None:
    random.seed(SEED)
    np.random.seed(SEED)
    try:
        namespace: dict = {}
        exec(code, namespace)
        score = evaluation.evaluate_program(code, namespace[name])
        metric = None if score is None else float(score)
    except BaseException as exc:  # noqa: BLE001 - every failure is a reason
        if not _changed_modules(answers, held):
            kind, reason = classify(exc)
            send_answer(answers, MEMORY if kind == FailureKind.MEMORY else HEURISTIC, reason=reason)
        return
    if _changed_modules(answers, held):
        return
    if metric is None:
        send_answer(answers, HEURISTIC, reason="the evaluation returned None")
    else:
        send_answer(answers, DONE, metric=metric)


def _run_instance(answers: int, task, spec, evaluate, priority, instance, limit, compiler, verdict, held):
    """One instance: the decisions (compiled where the compiler accepts the program, in Python
    where it does not or where the compiled function fails), answered to the judge; the program's
    failure where it replaced a builtin or a module's name meanwhile (``held``)."""
    note = "" if verdict is None else verdict.reason
    compiled = None
    if verdict is not None and verdict.function is not None:
        recorder = Recorder(verdict.function, limit)
        status, metric, reason = _decide(evaluate, recorder, instance, held)
        if status in (DONE, STOPPED) and verdict.still_checked():
            send_answer(answers, status, recorder.decisions, note=note, metric=metric, compiled=True)
            return verdict
        note = "fails on an instance compiled, or meets argument types the probes did not: evaluated in Python"
        verdict = None
    compiled = None if compiler is None else False
    recorder = Recorder(priority, limit)
    began = time.perf_counter()
    status, metric, reason = _decide(evaluate, recorder, instance, held)
    seconds = time.perf_counter() - began
    if status == PROGRAM:  # it replaced a name at a call: what the task's code did since is not its answer
        send_answer(answers, PROGRAM, reason=reason)
        return verdict
    if compiler is not None and verdict is None and status in (DONE, STOPPED):
        verdict = compiler.ready(task, spec, seconds)  # compiled once Python has taken long enough
        note = verdict.reason if verdict is not None else compiler.waiting(task, spec)
    send_answer(answers, status, recorder.decisions, reason, note, seconds, metric, compiled)
    return verdict


def _decide(evaluate, recorder: Recorder, instance, held: HeldModules) -> tuple[int, float, str]:
    """``(status, metric, reason)`` of the task's evaluation of ``recorder`` on ``instance``;
    ``PROGRAM`` where the program replaced a name ``held`` holds meanwhile (put back before anything else runs)."""
    random.seed(SEED)  # every instance starts from the same global random state
    np.random.seed(SEED)
    try:
        outcome = float(evaluate(recorder, instance))
    except BaseException as exc:  # noqa: BLE001 - every failure is a reason, once the names are as held
        outcome = exc
    changed = held.put_back()
    if changed:
        return PROGRAM, math.nan, one_line(changed)
    if isinstance(outcome, DecisionLimit):
        return STOPPED, math.nan, ""
    if isinstance(outcome, BaseException):
        kind, reason = classify(outcome)
        return {FailureKind.MEMORY: MEMORY, FailureKind.HEURISTIC: HEURISTIC}.get(kind, ERROR), math.nan, reason
    return DONE, outcome, ""
