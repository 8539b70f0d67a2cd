"""The host's printed advice that does not apply to a wrapped run, held back while its loops run.

llm4ad's methods print, when too few initial programs were valid, "The search is terminated
since ... Please increase the `initial_sample_nums_max` argument": a setting a wrapped run does
not expose, and advice that misleads when every program failed for one reason. The run says
instead why it ended (``RobustMixin.ended_early``, and ``raise-ahd run``'s exit status).
"""
from __future__ import annotations

import contextlib
import io
import sys
import threading

__all__ = ["HELD_BACK", "holding_back_host_advice"]

HELD_BACK = ("The search is terminated since",)  # how the host's lines that do not apply begin


class _Filter(io.TextIOBase):
    """Writes to ``target`` every line but those beginning with one of ``HELD_BACK``."""

    def __init__(self, target):
        self.target = target
        self.held: list[str] = []
        self._partial = ""
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self._lock:
            pending = self._partial + text
            *lines, self._partial = pending.split("\n")
            for line in lines:
                if line.startswith(HELD_BACK):
                    self.held.append(line)
                else:
                    self.target.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._partial and not self._partial.startswith(HELD_BACK):
                self.target.write(self._partial)
                self._partial = ""
        self.target.flush()


@contextlib.contextmanager
def holding_back_host_advice():
    """Within it, the host's lines in ``HELD_BACK`` are not printed; yields the list that holds them."""
    stream = _Filter(sys.stdout)
    with contextlib.redirect_stdout(stream):
        try:
            yield stream.held
        finally:
            stream.flush()
