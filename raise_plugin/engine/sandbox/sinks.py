"""Where a worker's and a program's ``print`` goes: nowhere, counted, and refused past the cap."""
from __future__ import annotations

import io
import sys

__all__ = ["sinks", "install_sinks"]


class _CappedSink(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` of a worker: discards text, refuses it past the cap."""

    def __init__(self, cap_bytes: float | None):
        self.cap = cap_bytes
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        self.count += len(text)
        if self.cap is not None and self.count > self.cap:
            raise OSError(f"sandbox: the program printed more than {self.cap / 2 ** 20:g} MB")
        return len(text)


_sinks: list[_CappedSink] = []


def sinks() -> list[_CappedSink]:
    """This process's ``sys.stdout`` and ``sys.stderr`` sinks (their counts are reset per job)."""
    return _sinks


def install_sinks(cap_bytes: float | None) -> None:
    """Make this process's ``sys.stdout`` and ``sys.stderr`` sinks of ``cap_bytes`` each."""
    _sinks[:] = [_CappedSink(cap_bytes), _CappedSink(cap_bytes)]
    sys.stdout = sys.__stdout__ = _sinks[0]
    sys.stderr = sys.__stderr__ = _sinks[1]
