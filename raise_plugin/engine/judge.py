"""The judge: a program runs in a process of its own, forked from a clean spawner and confined
(seccomp, Landlock, resource limits, an audit hook), and answers each instance with its decisions
as raw integers; the worker, which never runs a program's code, replays them with the task's own
simulator to score them. Nothing a program's process sends is unpickled.

Processes, one worker (``sandbox.worker_main``) each::

    worker (the judge)   holds the instance sets, scores decisions, answers the engine
      spawner            forked by the worker before it holds anything; forks program processes
        program process  one per job (per program on the compiled path): runs the program
"""
from __future__ import annotations

import collections
import math
import os
import pickle
import random
import select
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass

import numpy as np

from raise_plugin.programs import ProgramError
from tasks.common.decision import DecisionLimit, Recorder, Replay
from tasks.common.errors import HeuristicError, printable

from .confine import layer
from .limits import SandboxLimits
from .results import EvalResult, FailureKind
from .seccomp import install

__all__ = ["Judge", "Record", "evaluate_heuristic", "current_judge"]

# One answer of a program's process: status, compiled (0 no, 1 yes, 2 not asked), the number of
# decisions, the lengths of the reason and of the compiled path's note, Python seconds, and the
# metric (read only for tasks the judge cannot replay); then the decisions (int64, little-endian)
# and the two texts (UTF-8).
_HEADER = struct.Struct("<BBxxIHHdd")
DONE, STOPPED, HEURISTIC, PROGRAM, MEMORY, ERROR = range(6)
_KINDS = {HEURISTIC: FailureKind.HEURISTIC, PROGRAM: FailureKind.PROGRAM, MEMORY: FailureKind.MEMORY,
          ERROR: FailureKind.ERROR}
_TEXT_BYTES = 2000       # what one text of an answer may hold
_DECISIONS_BOUND = 1 << 24  # decisions one instance may take, for tasks that do not say
_SEED = 0                # the global random generators' seed before every instance
# program processes kept alive per worker, each for one program: a population's members are met
# again at every refresh, and on the compiled path each process compiles its program once
_KEPT = {False: 4, True: 16}


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """``n`` bytes from ``fd`` by ``deadline``; ``None`` at end of file; ``TimeoutError`` past it."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data, deadline: float | None = None) -> None:
    view = memoryview(data)
    while view:
        if deadline is not None:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not select.select([], [fd], [], remaining)[1]:
                raise TimeoutError
        written = os.write(fd, view[: 1 << 16])
        view = view[written:]


# -- the program's process -------------------------------------------------------------------

def _answer(fd: int, status: int, decisions=None, reason: str = "", note: str = "", seconds: float = 0.0,
            metric: float = math.nan, compiled: bool | None = None) -> None:
    raw = b"" if decisions is None else np.ascontiguousarray(decisions, dtype="<i8").tobytes()
    why = reason.encode("utf-8", "replace")[:_TEXT_BYTES]
    said = note.encode("utf-8", "replace")[:_TEXT_BYTES]
    flag = 2 if compiled is None else int(bool(compiled))
    _write_all(fd, _HEADER.pack(status, flag, len(raw) // 8, len(why), len(said), seconds, metric) + raw + why + said)


def _receive_request(fd: int):
    head = _read_exact(fd, 8, None)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack("<Q", head)[0], None)
    return None if body is None else pickle.loads(body)  # the judge's own message


def _close_other_descriptors(keep: tuple[int, ...]) -> None:
    keep = tuple(sorted({0, 1, 2, *keep}))
    low = 0
    for fd in keep:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _confine_program(workdir: str, limits: SandboxLimits) -> list[str]:
    """Everything that holds a program's process, in the order it must come; what was applied."""
    from . import sandbox

    sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the spawner, which dies with the worker
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    compiler_dirs = sandbox.load_compiler() if limits.jit else ()  # before the memory cap and the hook
    sandbox.cap_memory(limits.memory_mb)
    if limits.file_mb is not None:
        sandbox.set_limit("RLIMIT_FSIZE", int(limits.file_mb) * 1024 * 1024)
    sandbox.set_limit("RLIMIT_CORE", 0)
    applied = []
    if limits.confine:
        applied += layer(workdir)  # a Landlock layer of its own: its directory only, not its siblings'
        applied += install(threads=True)  # no process, socket, ptrace or signal to another process
    if limits.max_processes is not None:
        sandbox.set_limit("RLIMIT_NPROC", int(limits.max_processes))
    if limits.audit:
        sys.addaudithook(sandbox.audit_hook(workdir, compiler_dirs))
    return applied


def _program_main(requests: int, answers: int, workdir: str, limits: SandboxLimits) -> None:
    """A program's process: confine, then answer the judge's requests until it closes the pipe."""
    from . import sandbox
    from .jobs import classify, one_line

    _close_other_descriptors((requests, answers))
    os.setpgid(0, 0)  # a group of its own, killed whole with it
    set_judge(None)  # this process is no judge
    try:
        _confine_program(workdir, limits)
    except BaseException as exc:  # noqa: BLE001 - said once, then this process ends
        _answer(answers, ERROR, reason=one_line(f"the program's process could not start: {type(exc).__name__}: {exc}"))
        os._exit(0)
    compiler = None
    if limits.jit:
        from .compiled import Compiler
        compiler = Compiler(after=limits.jit_after)
    task = evaluate = priority = spec = verdict = None
    while True:
        message = _receive_request(requests)
        if message is None:
            os._exit(0)
        for sink in sandbox.sinks():
            sink.count = 0
        if message[0] == "program":
            _, task_ref, spec, compiles = message
            if not compiles:  # a look-ahead check: the decisions are the same in Python, and cheaper
                compiler = None
            try:
                from tasks import get_task
                task = get_task(task_ref)
                evaluate = task.evaluate  # taken before the program's module code runs
                verdict = compiler.ready(task, spec) if compiler is not None else None
                priority = spec.resolve(task)
            except ProgramError as exc:
                _answer(answers, PROGRAM, reason=one_line(str(exc)))
                continue
            except BaseException as exc:  # noqa: BLE001 - a program's module code may raise anything
                kind, reason = classify(exc)
                _answer(answers, MEMORY if kind == FailureKind.MEMORY else PROGRAM, reason=reason)
                continue
            _answer(answers, DONE)
        elif message[0] == "host":  # a host Evaluation's own evaluate_program: its score, not judged
            _, evaluation, code, name = message
            _answer_host(answers, evaluation, code, name)
        else:  # ("instance", instance, limit)
            _, instance, limit = message
            verdict = _run_instance(answers, task, spec, evaluate, priority, instance, limit, compiler, verdict)


def _answer_host(answers: int, evaluation, code: str, name: str) -> None:
    from .jobs import classify

    random.seed(_SEED)
    np.random.seed(_SEED)
    try:
        namespace: dict = {}
        exec(code, namespace)
        score = evaluation.evaluate_program(code, namespace[name])
        if score is None:
            _answer(answers, HEURISTIC, reason="the evaluation returned None")
        else:
            _answer(answers, DONE, metric=float(score))
    except BaseException as exc:  # noqa: BLE001 - every failure is a reason
        kind, reason = classify(exc)
        _answer(answers, MEMORY if kind == FailureKind.MEMORY else HEURISTIC, reason=reason)


def _run_instance(answers: int, task, spec, evaluate, priority, instance, limit, compiler, verdict):
    """One instance: the decisions (compiled where the compiler accepts the program, in Python
    where it does not or where the compiled function fails), answered to the judge."""
    note = "" if verdict is None else verdict.reason
    compiled = None
    if verdict is not None and verdict.function is not None:
        recorder = Recorder(verdict.function, limit)
        status, metric, reason = _decide(evaluate, recorder, instance)
        if status in (DONE, STOPPED) and verdict.still_checked():
            _answer(answers, status, recorder.decisions, note=note, metric=metric, compiled=True)
            return verdict
        note = "fails on an instance compiled, or meets argument types the probes did not: evaluated in Python"
        verdict = None
    compiled = None if compiler is None else False
    recorder = Recorder(priority, limit)
    began = time.perf_counter()
    status, metric, reason = _decide(evaluate, recorder, instance)
    seconds = time.perf_counter() - began
    if compiler is not None and verdict is None and status in (DONE, STOPPED):
        verdict = compiler.ready(task, spec, seconds)  # compiled once Python has taken long enough
        note = verdict.reason if verdict is not None else compiler.waiting(task, spec)
    _answer(answers, status, recorder.decisions, reason, note, seconds, metric, compiled)
    return verdict


def _decide(evaluate, recorder: Recorder, instance) -> tuple[int, float, str]:
    from .jobs import classify

    random.seed(_SEED)  # every instance starts from the same global random state
    np.random.seed(_SEED)
    try:
        return DONE, float(evaluate(recorder, instance)), ""
    except DecisionLimit:
        return STOPPED, math.nan, ""
    except BaseException as exc:  # noqa: BLE001 - every failure is a reason
        kind, reason = classify(exc)
        return {FailureKind.MEMORY: MEMORY, FailureKind.HEURISTIC: HEURISTIC}.get(kind, ERROR), math.nan, reason


# -- the spawner -----------------------------------------------------------------------------

def _spawner_main(channel: socket.socket) -> None:
    """Fork a program's process for every ``("spawn", workdir, limits)`` request (two pipe ends
    passed with it) and answer its pid; kill one for every ``("kill", pid)`` (no answer), and
    for every ``("reap", pid)`` kill it, wait for it and answer its wait status (-1: unknown)."""
    from . import sandbox

    _close_other_descriptors((channel.fileno(),))
    sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
    import gc
    gc.freeze()  # a forked program's collections then do not copy the spawner's pages
    ended: collections.OrderedDict[int, int] = collections.OrderedDict()  # pid -> wait status, reaped
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 1 << 16, 2)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        request = pickle.loads(message)  # from the worker, which runs no program
        if request[0] in ("kill", "reap"):
            pid = request[1]
            if pid not in ended:
                _kill(pid)
            if request[0] == "reap":
                channel.sendall(struct.pack("<q", ended.pop(pid) if pid in ended else _wait(pid)))
            _reap_ended(ended)
            continue
        _, workdir, limits = request
        pid = os.fork()
        if pid == 0:
            try:
                channel.close()
                _program_main(fds[0], fds[1], workdir, limits)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        channel.sendall(struct.pack("<q", pid))
        _reap_ended(ended)


def _kill(pid: int) -> None:
    for kill in (os.killpg, os.kill):  # its group: what it forked, where nothing stopped it forking
        try:
            kill(pid, signal.SIGKILL)  # a process that closed its pipes may still be running
        except OSError:
            pass


def _wait(pid: int) -> int:
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return -1


def _reap_ended(ended: collections.OrderedDict) -> None:
    """Reap the program processes that have ended, keeping their statuses (the latest 256)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        ended[pid] = status
        while len(ended) > 256:
            ended.popitem(last=False)


def _reap_orphans() -> None:
    """Reap what a program's process left when it was killed (where nothing stopped it forking):
    orphans come back to the worker, a child subreaper."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def describe_status(status: int) -> str:
    """How a program's process ended, from its wait status."""
    if status < 0:
        return "ended"
    if os.WIFSIGNALED(status):
        try:
            name = signal.Signals(os.WTERMSIG(status)).name
        except ValueError:
            name = f"signal {os.WTERMSIG(status)}"
        return f"was killed by {name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


@dataclass
class Record:
    """What a program's process answered for one instance."""

    status: int
    decisions: np.ndarray
    reason: str
    note: str
    seconds: float
    metric: float
    compiled: bool | None


class _Malformed(Exception):
    """A program's process sent something that is not an answer."""


class ProgramProcess:
    """The worker's handle on one program's process (its pid, a pipe each way, its directory)."""

    def __init__(self, pid: int, requests: int, answers: int, workdir: str, spawner, key=None):
        self.pid, self.requests, self.answers, self.workdir, self.key = pid, requests, answers, workdir, key
        self._spawner = spawner
        self.closed = False
        self.status: int | None = None

    def send(self, message, deadline: float | None = None) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(self.requests, struct.pack("<Q", len(body)) + body, deadline)

    def receive(self, deadline: float | None, bound: int) -> Record | None:
        """The next answer; ``None`` when the process is gone; ``TimeoutError`` past ``deadline``;
        ``_Malformed`` for anything that is not an answer of at most ``bound`` decisions."""
        head = _read_exact(self.answers, _HEADER.size, deadline)
        if head is None:
            return None
        status, flag, count, why, said, seconds, metric = _HEADER.unpack(head)
        if status > ERROR or flag > 2 or count > bound or why > _TEXT_BYTES or said > _TEXT_BYTES:
            raise _Malformed(f"status {status}, {count} decisions, texts of {why} and {said} bytes")
        body = _read_exact(self.answers, 8 * count + why + said, deadline)
        if body is None:
            return None
        decisions = np.frombuffer(body, dtype="<i8", count=count).astype(np.int64)
        reason = printable(body[8 * count: 8 * count + why].decode("utf-8", "replace"))
        note = printable(body[8 * count + why:].decode("utf-8", "replace"))
        return Record(status, decisions, reason, note, float(seconds), float(metric),
                      None if flag == 2 else bool(flag))

    def close(self) -> None:
        """Kill the process (it may be busy, or not reading; its spawner reaps it), close the
        pipes, remove its directory."""
        if self.closed:
            return
        self.closed = True
        if self.status is None:
            self._spawner("kill", self.pid)
        for fd in (self.requests, self.answers):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.workdir, ignore_errors=True)

    def died(self) -> str:
        """How the process ended, once it is gone (it is reaped first)."""
        if self.status is None:  # reaped now, or already, by the spawner, which kept its status
            self.status = self._spawner("reap", self.pid)
        self.close()
        return f"the program's process {describe_status(-1 if self.status is None else self.status)}"


class Judge:
    """The worker's side: starts program processes, hands them instances, scores their decisions.

    Built in the worker before it holds any instance set (its spawner is forked then)."""

    def __init__(self, limits: SandboxLimits, workdir: str):
        self.limits = limits
        self.workdir = workdir
        self._made = 0
        self._replayable: dict[str, bool] = {}
        self._kept: collections.OrderedDict = collections.OrderedDict()
        # one message a packet, so that one request never runs into the next
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                _spawner_main(child)
            finally:
                os._exit(0)
        child.close()
        self._channel, self.spawner = parent, pid

    # -- program processes -----------------------------------------------------------------------
    def _start(self, key=None) -> ProgramProcess:
        """A fresh program process, forked by the spawner."""
        self._made += 1
        workdir = os.path.join(self.workdir, f"program-{self._made}")
        os.mkdir(workdir, 0o700)
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        try:
            socket.send_fds(self._channel, [pickle.dumps(("spawn", workdir, self.limits))], [requests_r, answers_w])
            pid = self._answer()
        finally:
            os.close(requests_r)
            os.close(answers_w)
        return ProgramProcess(pid, requests_w, answers_r, workdir, self._ask, key)

    def _answer(self) -> int:
        raw = self._channel.recv(8)
        if len(raw) != 8:
            raise RuntimeError("the worker's spawner died")
        return struct.unpack("<q", raw)[0]

    def _ask(self, what: str, pid: int) -> int | None:
        """``kill`` (no answer) or ``reap`` (its wait status) a program process, through the
        spawner, its parent."""
        try:
            self._channel.sendall(pickle.dumps((what, pid)))
            return self._answer() if what == "reap" else None
        except (OSError, RuntimeError):
            return -1

    def _process_for(self, key, keep: bool) -> tuple[ProgramProcess, bool]:
        """A kept process of the same program, or a new one (kept afterwards when ``keep``)."""
        if keep and key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key], True
        process = self._start(key)
        if keep:
            self._kept[key] = process
            while len(self._kept) > _KEPT[self.limits.jit]:
                self._kept.popitem(last=False)[1].close()
        return process, False

    def _drop(self, process: ProgramProcess) -> None:
        if self._kept.get(process.key) is process:
            del self._kept[process.key]
        process.close()
        _reap_orphans()

    def close(self) -> None:
        for process in self._kept.values():
            process.close()
        self._kept.clear()
        self._channel.close()

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
        if not math.isfinite(metric):
            raise HeuristicError(f"the task returned a non-finite metric ({metric})")
        return metric

    def run_job(self, job, instances: list) -> EvalResult:
        """``job`` on ``instances`` (the worker's cached set): decisions from a program process,
        scores from the replay. Never raises."""
        from tasks import get_task

        start = time.perf_counter()
        count = len(job.indices)
        try:
            task = get_task(job.task)
        except Exception as exc:  # noqa: BLE001 - reported as the task's failure
            return EvalResult.failed(count, FailureKind.ERROR, printable(f"the task failed: {exc}"))
        process, _ = self._process_for((job.task, job.program), keep=self.limits.jit)
        deadline = deadline_of(job.timeout)
        metrics, reasons = [math.nan] * count, [""] * count
        first: tuple[str, str] | None = None
        compiled: list[bool | None] = []
        originals: list[tuple[int, np.ndarray]] = []
        note = ""
        try:
            process.send(("program", job.task, job.program, True), deadline)
            record = process.receive(deadline, 0)
            if record is None or record.status != DONE:
                if record is None:
                    died = process.died()
                    self._drop(process)
                    return EvalResult.failed(count, FailureKind.WORKER_DIED, f"{died} while loading the program",
                                             time.perf_counter() - start)
                self._drop(process)
                return EvalResult.failed(count, _KINDS.get(record.status, FailureKind.PROGRAM), record.reason,
                                         time.perf_counter() - start)
            for k, index in enumerate(job.indices):
                instance = instances[index]
                process.send(("instance", instance, None), deadline)
                record = process.receive(deadline, self.bound(task, instance))
                if record is None:
                    died = process.died()
                    self._drop(process)
                    return EvalResult.failed(count, FailureKind.WORKER_DIED, f"{died} during the evaluation",
                                             time.perf_counter() - start)
                compiled.append(record.compiled)
                note = record.note or note
                try:
                    if record.status != DONE:
                        raise _Failure(_KINDS.get(record.status, FailureKind.ERROR), record.reason)
                    metrics[k] = self.score(task, instance, record)
                    if not record.compiled:  # a check runs in Python: compiled decisions may differ in ties
                        originals.append((index, record.decisions))
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
            self._drop(process)
            return EvalResult.failed(count, FailureKind.TIMEOUT, f"timed out after {job.timeout:g} s",
                                     time.perf_counter() - start)
        except _Malformed as exc:
            self._drop(process)
            return EvalResult.failed(count, FailureKind.TAMPERED, f"the program's process sent a malformed "
                                     f"answer ({exc})", time.perf_counter() - start)
        except OSError as exc:  # a broken pipe: the process is gone
            died = process.died()
            self._drop(process)
            return EvalResult.failed(count, FailureKind.WORKER_DIED, printable(f"{died} during the evaluation "
                                     f"({exc.strerror or exc})"), time.perf_counter() - start)
        if not self.limits.jit or (first is not None and first[0] in FailureKind.REPEATING):
            self._drop(process)
        if first is None:
            looked = self.looks_ahead(task, job, instances, [r for r in originals], deadline_of(job.timeout))
            if looked is not None:
                return EvalResult.failed(count, FailureKind.FORESIGHT, looked, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        asked = [c for c in compiled if c is not None]
        is_compiled = None if not self.limits.jit else (bool(asked) and all(asked))
        if first is None:
            return EvalResult(tuple(metrics), tuple(reasons), seconds, compiled=is_compiled, fallback=note)
        return EvalResult(tuple(metrics), tuple(reasons), seconds, first[0], first[1], compiled=is_compiled,
                          fallback=note)

    def looks_ahead(self, task, job, instances: list, decided: list, deadline: float | None) -> str | None:
        """With probability ``limits.foresight``, one instance of the job checked for look-ahead:
        the program runs again, in a fresh process that never saw the instance, on a copy whose
        part after a random point is replaced; up to the last decision whose arguments are the
        same on both, its decisions must be the same. Why not, or ``None``."""
        if not decided or self.limits.foresight <= 0:
            return None
        seed = zlib.crc32(repr((job.task, job.program.code, job.program.baseline, job.set_id, job.version,
                                job.indices)).encode())
        rng = np.random.default_rng(seed)
        if rng.random() >= self.limits.foresight:
            return None
        index, decisions = decided[int(rng.integers(len(decided)))]
        instance = instances[index]
        probe = task.future_replaced(instance, rng)
        if probe is None:
            return None
        same = _same_inputs(task, instance, probe, decisions)
        if same == 0:
            return None
        process = self._start()
        try:
            process.send(("program", job.task, job.program, False), deadline)
            record = process.receive(deadline, 0)
            if record is None or record.status != DONE:
                return None
            process.send(("instance", probe, same), deadline)  # it need decide no further
            record = process.receive(deadline, self.bound(task, probe))
        except (TimeoutError, _Malformed, OSError):
            return None  # no verdict: the run itself was valid
        finally:
            process.close()
        if record is None or record.status not in (DONE, STOPPED) or record.decisions.size < same:
            return None
        differ = np.flatnonzero(record.decisions[:same] != decisions[:same])
        if differ.size == 0:
            return None
        # the quick digests may have missed a difference of the arguments: count exactly before judging
        if int(differ[0]) >= _same_inputs(task, instance, probe, decisions[: int(differ[0]) + 1], exact=True):
            return None
        return (f"the program looks ahead: its decision {int(differ[0])} changed when only the part of the "
                f"instance still to come changed (checked on instance {index})")

    def bound(self, task, instance) -> int:
        """The most decisions ``instance`` can take (what an answer may carry)."""
        bound = getattr(task, "decision_bound", None)  # host adapters have none
        try:
            return min(int(bound(instance)), _DECISIONS_BOUND) if callable(bound) else _DECISIONS_BOUND
        except Exception:  # noqa: BLE001 - a task's own method failing: the generous bound
            return _DECISIONS_BOUND

    def metric(self, task, spec, instance) -> float:
        """The metric of program ``spec`` on one instance (the inner search's evaluations); raises
        ``HeuristicError`` where the program fails, ``MemoryError`` past its memory cap."""
        key = ("search", getattr(task, "name", ""), spec)  # its own process: the searches run in Python
        process, known = self._process_for(key, keep=True)
        try:
            if not known:
                process.send(("program", _task_reference(task), spec, False))
                record = process.receive(None, 0)
                if record is None or record.status != DONE:
                    self._drop(process)
                    self._fail(record)
            process.send(("instance", instance, None))
            record = process.receive(None, self.bound(task, instance))
        except _Malformed as exc:
            self._drop(process)
            raise HeuristicError(f"the program's process sent a malformed answer ({exc})") from None
        except OSError:
            self._drop(process)
            raise HeuristicError("the program's process died during the evaluation") from None
        if record is None or record.status != DONE:
            self._drop(process)
            self._fail(record)
        return self.score(task, instance, record)

    def host_score(self, evaluation, code: str, name: str) -> float | None:
        """A host ``Evaluation``'s own ``evaluate_program`` of ``code`` in a fresh program process:
        its score as a float (computed there: such an evaluation cannot be replayed), ``None``
        where it returned None; ``HeuristicError`` / ``MemoryError`` where it failed."""
        process = self._start()
        try:
            process.send(("host", evaluation, code, name))
            record = process.receive(None, 0)
        except _Malformed as exc:
            raise HeuristicError(f"the program's process sent a malformed answer ({exc})") from None
        except OSError:
            record = None
        finally:
            process.close()
            _reap_orphans()
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


def _same_inputs(task, instance, probe, decisions: np.ndarray, exact: bool = False) -> int:
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


def deadline_of(seconds: float | None) -> float | None:
    return None if seconds is None else time.perf_counter() + float(seconds)


class _Failure(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def _task_reference(task) -> str:
    try:
        from tasks import reference_of
        return reference_of(task)
    except Exception:  # noqa: BLE001 - a task known by name only
        return task.name


_current: list[Judge | None] = [None]


def current_judge() -> Judge | None:
    """The judge of this process, when it is a worker."""
    return _current[0]


def set_judge(judge: Judge | None) -> None:
    _current[0] = judge


def evaluate_heuristic(task, priority, instance) -> float:
    """``task.evaluate(priority, instance)``, except that a program (``SourcePriority``) evaluated
    in a worker runs in a program process of its own and is scored by the judge."""
    from .jobs import SourcePriority

    judge = _current[0]
    if judge is not None and isinstance(priority, SourcePriority):
        return judge.metric(task, priority.spec, instance)
    return float(task.evaluate(priority, instance))
