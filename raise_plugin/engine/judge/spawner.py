"""A worker's spawner: a process forked by the worker before it holds anything, which forks a
program's process for each request and kills and reaps them; and ``ProgramProcesses``, the
worker's side of it (program processes started, kept per program, dropped)."""
from __future__ import annotations

import collections
import gc
import importlib
import os
import pickle
import signal
import socket
import struct
import tempfile

from tasks import get_task

from ..limits import SandboxLimits
from ..sandbox import PR_SET_PDEATHSIG, close_other_descriptors, prctl
from .one_cpu import hold
from .program_handle import ProgramProcess
from .program_process import program_main

__all__ = ["ProgramProcesses", "spawner_main", "reap_orphans"]

# program processes kept alive per worker, each for one program: a population's members are met
# again at every refresh, and on the compiled path each process compiles its program once
_KEPT = {False: 4, True: 16}


def spawner_main(channel: socket.socket) -> None:
    """Fork a program's process for every ``("spawn", workdir, limits, warm)`` request (two pipe
    ends passed with it; ``warm`` loaded here first, once: ``_warm``) and answer its pid; kill one
    for every ``("kill", pid)`` (no answer), and for every ``("reap", pid)`` kill it, wait for it
    and answer its wait status (-1: unknown)."""
    close_other_descriptors((channel.fileno(),))
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    gc.freeze()  # a forked program's collections then do not copy the spawner's pages
    ended: collections.OrderedDict[int, int] = collections.OrderedDict()  # pid -> wait status, reaped
    warmed: set = set()
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
        _, workdir, limits, warm = request
        if warm is not None and warm not in warmed:
            warmed.add(warm)
            _warm(warm)
        pid = os.fork()
        if pid == 0:
            try:
                channel.close()
                program_main(fds[0], fds[1], workdir, limits)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        channel.sendall(struct.pack("<q", pid))
        _reap_ended(ended)


def _warm(warm: tuple[str, str]) -> None:
    """Load a task (``("task", reference)``) or a host evaluation's module (``("module", name)``)
    in the spawner, so that every program's process forked after it has it loaded. A program's
    process loads its task after it is confined, where a host task's modules cost about half a
    second a process (matplotlib, which the host's tasks import, rebuilds its font list where the
    sandbox hides its cache). What fails to load here fails again, and is said, in the program's
    process, as before."""
    kind, name = warm
    try:
        if kind == "task":
            get_task(name)
        else:
            importlib.import_module(name)
    except BaseException:  # noqa: BLE001 - said by the program's process, which loads it again
        pass
    gc.freeze()  # what it made stays out of the forked processes' collections, as the rest


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


def _reap_ended(ended: collections.OrderedDict | None) -> None:
    """Reap the child processes that have ended, keeping their statuses in ``ended`` (the latest
    256) unless it is ``None``."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if ended is not None:
            ended[pid] = status
            while len(ended) > 256:
                ended.popitem(last=False)


def reap_orphans() -> None:
    """Reap what a program's process left when it was killed (where nothing stopped it forking):
    orphans come back to the worker, a child subreaper."""
    _reap_ended(None)


class ProgramProcesses:
    """The worker's side of its spawner: starts program processes through it, keeps some alive
    per program (``process_for``), kills and reaps them. Built before the worker holds any
    instance set (the spawner is forked then)."""

    def __init__(self, limits: SandboxLimits, workdir: str):
        self.limits = limits
        self.workdir = workdir
        self.cpu: int | None = None  # where a look-ahead check's process runs (``one_cpu``)
        self._kept: collections.OrderedDict = collections.OrderedDict()
        # one message a packet, so that one request never runs into the next
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                parent.close()
                spawner_main(child)
            finally:
                os._exit(0)
        child.close()
        self._channel, self.spawner = parent, pid

    def start(self, key=None, warm: tuple[str, str] | None = None) -> ProgramProcess:
        """A fresh program process, forked by the spawner (after it loads ``warm``, the first time:
        ``_warm``)."""
        # named at random (0o700): a count in its name told a program how many processes its worker had
        # started before it, so what shared its job, and let one program signal the next
        workdir = tempfile.mkdtemp(prefix="program-", dir=self.workdir)
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        try:
            socket.send_fds(self._channel, [pickle.dumps(("spawn", workdir, self.limits, warm))],
                           [requests_r, answers_w])
            pid = self._answer()
        finally:
            os.close(requests_r)
            os.close(answers_w)
        hold(pid, self.cpu)
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

    def spawner_gone(self) -> bool:
        """Whether the spawner has ended (killed from outside: the OOM killer, a user's ``kill``);
        every program process this worker would start then fails to start."""
        try:
            return os.waitpid(self.spawner, os.WNOHANG)[0] != 0
        except ChildProcessError:  # reaped already, with the orphans
            return True

    def process_for(self, key, keep: bool, warm: tuple[str, str] | None = None) -> tuple[ProgramProcess, bool]:
        """A kept process of the same program, or a new one (kept afterwards when ``keep``)."""
        if keep and key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key], True
        process = self.start(key, warm)
        if keep:
            self._kept[key] = process
            while len(self._kept) > _KEPT[self.limits.jit]:
                self._kept.popitem(last=False)[1].close()
        return process, False

    def drop(self, process: ProgramProcess) -> None:
        if self._kept.get(process.key) is process:
            del self._kept[process.key]
        process.close()
        reap_orphans()

    def close(self) -> None:
        for process in self._kept.values():
            process.close()
        self._kept.clear()
        self._channel.close()
