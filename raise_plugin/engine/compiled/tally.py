"""How many programs an executor's jobs ran compiled and how many were left on Python (the
compiled path, ``compiled``), the line that says so, and its record in a run directory
(``compiled.json``)."""
from __future__ import annotations

import collections
import json
import threading
from pathlib import Path

from .compiler import WAITING, program_key

__all__ = ["CompiledTally", "tally_line"]


class CompiledTally:
    """How many programs ran compiled, how many were left on Python (by reason) and how many were
    never evaluated long enough to be compiled, over the jobs an executor ran. A program counts
    as compiled once a job of it ran compiled, unless a job of it was left on Python for a
    reason (the compiled function failed on an instance, or it was refused). Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._compiled: set = set()
        self._waiting: set = set()
        self._failed: set = set()  # failed before anything of them ran compiled, with no reason of the path's
        self._python: dict = {}
        self.jobs = {"compiled": 0, "python": 0}

    def record(self, job, result) -> None:
        if result.compiled is None:
            return
        key = program_key(job.task, job.program)
        with self._lock:
            if result.compiled:
                self.jobs["compiled"] += 1
                if key not in self._python:
                    self._compiled.add(key)
                    self._waiting.discard(key)
                    self._failed.discard(key)
            elif result.fallback.startswith(WAITING):
                self.jobs["python"] += 1
                if key not in self._python and key not in self._compiled:
                    self._waiting.add(key)
                    self._failed.discard(key)
            elif not result.fallback and not result.valid:  # it failed: the compiled path refused nothing
                self.jobs["python"] += 1
                if key not in self._python and key not in self._compiled and key not in self._waiting:
                    self._failed.add(key)
            else:
                self.jobs["python"] += 1
                self._compiled.discard(key)
                self._waiting.discard(key)
                self._failed.discard(key)
                self._python.setdefault(key, result.fallback)

    @property
    def programs_compiled(self) -> int:
        return len(self._compiled)

    @property
    def programs_python(self) -> int:
        """Programs left on Python for a reason (``reasons``)."""
        return len(self._python)

    @property
    def programs_waiting(self) -> int:
        """Programs that ran only in Python, none of them evaluated long enough in one worker to be compiled."""
        return len(self._waiting)

    def reasons(self) -> dict[str, int]:
        """Programs left on Python, by the kind of reason (the text before its first colon)."""
        with self._lock:
            kinds = collections.Counter(reason.split(":", 1)[0] for reason in self._python.values())
        return dict(kinds.most_common())

    def as_dict(self) -> dict:
        with self._lock:
            jobs = dict(self.jobs)
        return {"programs_compiled": self.programs_compiled, "programs_python": self.programs_python,
                "programs_waiting": self.programs_waiting, "programs_failed": len(self._failed),
                "jobs_compiled": jobs["compiled"],
                "jobs_python": jobs["python"], "python_reasons": self.reasons()}

    def line(self) -> str:
        return tally_line(self.as_dict())

    def write(self, directory: Path) -> str:
        """The tally recorded in ``directory/compiled.json``; its line."""
        tally = self.as_dict()
        (Path(directory) / "compiled.json").write_text(json.dumps(tally, indent=1) + "\n")
        return tally_line(tally)


def tally_line(tally: dict) -> str:
    """One line for a ``CompiledTally.as_dict()`` (as a run writes it to ``compiled.json``)."""
    reasons = ", ".join(f"{n} {k}" for k, n in tally["python_reasons"].items())
    return (f"{tally['programs_compiled']} programs compiled, {tally['programs_python']} on Python"
            + (f" ({reasons})" if reasons else "")
            + (f", {tally['programs_waiting']} not evaluated long enough to compile" if tally["programs_waiting"] else "")
            + (f", {tally['programs_failed']} failed before running compiled" if tally.get("programs_failed") else ""))
