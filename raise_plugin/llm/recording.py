"""A recording as ``replay:SOURCE`` reads it, read once: a ``--record`` file, or a run directory's
journal of answered calls (``CALLS_FILE``, in the same format), with the answers it holds.

Every reader of a replay takes it from ``read_recording``: the run's checks (``check_llm``), the
replay back-end (``ReplayLLM``), a run replayed from its directory (``replay.RecordedRun``) and a
compare's. The last recording read is kept, and read again only when its file has changed, so a
run that checks its replay and then replays it reads the file once.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from raise_plugin.durable import journal_lines
from raise_plugin.errors import UserError

__all__ = ["CALLS_FILE", "Recording", "read_recording", "recording_path", "run_directory_of", "journal_owner"]

CALLS_FILE = "llm_calls.jsonl"  # a run directory's journal of answered calls, in the recording's format


@dataclass(frozen=True)
class Recording:
    """What ``replay:SOURCE`` replays: the file it reads (``path``), the run directory given as the
    source (``run_dir``; ``None`` for a ``--record`` file or a journal named by its path) and the
    recorded answers, in order (each a read-only mapping: ``hash``, ``occurrence``, ``samplers``,
    ``operator``, ``prompt``, ``response``, ``usage``)."""

    path: Path
    run_dir: Path | None
    answers: tuple[Mapping, ...]

    @property
    def run(self) -> Path | None:
        """The run directory whose answers these are: the one given, or the run whose journal was
        named; ``None`` for a ``--record`` file."""
        return self.run_dir or journal_owner(self.path)

    @property
    def samplers(self) -> int:
        """How many sampler threads the recorded run asked with, at most (1 for one sampler)."""
        return max((int(answer.get("samplers") or 1) for answer in self.answers), default=1)


_last: dict[tuple, Recording] = {}  # the last recording read, by its file's identity and state
_last_lock = threading.Lock()


def read_recording(source: str | Path) -> Recording:
    """The recording ``replay:SOURCE`` reads (``recording_path``), with its answers; a last line
    left without its newline by a kill that does not read as an answer is passed over (a resume
    cuts it likewise: ``durable.AppendLog``). Any other line that is not an answer, a file that is
    not UTF-8 text, or a recording that holds no answer (nothing could be replayed) is a one-line
    ``UserError``. Read again only when the file has changed since the last read."""
    path, run_dir = recording_path(source), run_directory_of(source)
    try:
        state = path.stat()
    except OSError as exc:
        raise UserError(f"cannot read LLM recording {path}: {exc.strerror or exc}") from None
    key = (str(path.resolve()), str(run_dir), state.st_dev, state.st_ino, state.st_size, state.st_mtime_ns)
    with _last_lock:
        known = _last.get(key)
    if known is None:
        known = Recording(path, run_dir, _answers(path, source))
        with _last_lock:
            _last.clear()
            _last[key] = known
    return known


def _answers(path: Path, source) -> tuple[Mapping, ...]:
    try:
        lines = journal_lines(path)
    except OSError as exc:
        raise UserError(f"cannot read LLM recording {path}: {exc.strerror or exc}") from None
    answers = []
    for line in lines:
        entry = line.record
        if not (isinstance(entry, dict) and isinstance(entry.get("hash"), str)):
            if line.torn:  # no newline after it: torn by a kill while being written
                break
            raise UserError(f"LLM recording {path} line {line.number} is not a recorded answer (a --record file, or "
                            f"a run directory's {CALLS_FILE}, holds one JSON object per line)")
        answers.append(MappingProxyType(entry))
    if not answers:
        raise UserError(f"replay:{source}: the recording holds no answer")
    return tuple(answers)


def run_directory_of(source: str | Path) -> Path | None:
    """``source`` when it is a directory (``replay:RUN_DIR``), else ``None`` (``replay:FILE``)."""
    path = Path(source)
    return path if path.is_dir() else None


def recording_path(source: str | Path) -> Path:
    """The recording ``replay:SOURCE`` reads: a ``--record`` file, or a run directory's journal of
    answered calls; one line (``UserError``) when ``source`` is neither."""
    path = Path(source)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UserError(f"replay:{source}: not a run directory (no config.json)")
        if not (path / CALLS_FILE).is_file():
            raise UserError(f"replay:{source}: the run directory holds no journal of LLM answers ({CALLS_FILE})")
        return path / CALLS_FILE
    if not path.exists():
        raise UserError(f"replay:{source}: no such recording (a --record file) or run directory")
    if not path.is_file():  # a device or a pipe: nothing recorded there to read back
        raise UserError(f"replay:{source}: the recording holds no answer (not a regular file)")
    return path


def journal_owner(path: str | Path) -> Path | None:
    """The run directory whose journal of answered calls ``path`` is (its ``CALLS_FILE``, beside its
    ``config.json``), else ``None``."""
    path = Path(path)
    return path.parent if path.name == CALLS_FILE and (path.parent / "config.json").is_file() else None
