"""The worker's handle on one program's process: its pid, a pipe each way, its directory; and how
it ended, from its wait status."""
from __future__ import annotations

import os
import signal

from ..sandbox import remove_tree
from .protocol import Record, receive_answer, send_request

__all__ = ["ProgramProcess", "describe_status"]


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


class ProgramProcess:
    """The worker's handle on one program's process (its pid, a pipe each way, its directory)."""

    def __init__(self, pid: int, requests: int, answers: int, workdir: str, spawner, key=None):
        self.pid, self.requests, self.answers, self.workdir, self.key = pid, requests, answers, workdir, key
        self._spawner = spawner
        self.closed = False
        self.status: int | None = None
        self.left_folder = False  # its folder could not be removed: the program's doing

    def send(self, message, deadline: float | None = None) -> None:
        send_request(self.requests, message, deadline)

    def receive(self, deadline: float | None, bound: int) -> Record | None:
        """The next answer; ``None`` when the process is gone; ``TimeoutError`` past ``deadline``;
        ``Malformed`` for anything that is not an answer of at most ``bound`` decisions."""
        return receive_answer(self.answers, deadline, bound)

    def close(self) -> None:
        """Kill the process (it may be busy, or not reading; its spawner reaps it), close the
        pipes, remove its directory (without recursion: the program made it as it liked)."""
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
        self.left_folder = not remove_tree(self.workdir)

    def died(self) -> str:
        """How the process ended, once it is gone (it is reaped first)."""
        if self.status is None:  # reaped now, or already, by the spawner, which kept its status
            self.status = self._spawner("reap", self.pid)
        self.close()
        return f"the program's process {describe_status(-1 if self.status is None else self.status)}"
