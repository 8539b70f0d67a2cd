"""Argument types the benchmark scripts share: a bad value stops a script in argparse's one error line, exit 2,
before anything is measured or written (a script run from this folder has it on its path); and the runs they
start, whose refusal ends the script with the run's own one line and status."""
from __future__ import annotations

import argparse
import subprocess
from pathlib import Path


def at_least(low: int = 1):
    """An argparse type: a whole number >= ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {text!r}")
        return value
    return parse


def each_at_least(low: int = 1):
    """An argparse type: comma-separated whole numbers, each >= ``low`` (``1,2``)."""
    one = at_least(low)

    def parse(text: str) -> list[int]:
        try:
            return [one(part) for part in text.split(",")]
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"must be whole numbers >= {low} separated by commas, "
                                             f"got {text!r}") from None
    return parse


def non_negative(text: str) -> float:
    """An argparse type: a number >= 0 (seconds)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def output_file(text: str) -> str:
    """An argparse type: a file the script writes at its end, checked before anything is measured (a folder, or
    a place that cannot be written, is refused then, not after the measuring); ``opened`` makes the folders on
    the way."""
    from raise_plugin.durable import unwritable

    why = unwritable(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{text}: {why}")
    return text


def opened(path: str, newline: str | None = None):
    """``path`` opened for writing (text), the folders on the way made first."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", newline=newline)


def run_or_exit(cmd: list[str], **kwargs) -> None:
    """``subprocess.run(cmd, **kwargs)``; a command that fails (a run refusing its settings says why in one line
    on stderr) ends the script with its exit status, not a traceback of the call."""
    done = subprocess.run(cmd, **kwargs)
    if done.returncode:
        raise SystemExit(done.returncode)


def task_name(text: str) -> str:
    """An argparse type: a task the plugin can load (``tasks.get_task``), named as given."""
    from tasks import get_task
    from tasks.common.errors import UserError

    try:
        get_task(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def task_names(text: str) -> str:
    """An argparse type: comma-separated task names (``obp,ojsp``), each one ``task_name`` takes; the text as given."""
    for name in text.split(","):
        task_name(name)
    return text
