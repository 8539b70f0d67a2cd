"""Progress that suits where it is shown: a bar on a terminal or in a notebook, plain lines in a
log, or nothing; one small object with the part of ``tqdm``'s interface the callers use.

A caller's ``progress`` is ``True`` (``"auto"``), ``False`` (``"off"``), ``None`` (the caller
did not say: shown only where a person watches) or a mode of ``MODES``. The environment
variable ``RAISE_PROGRESS`` (bar, lines, off or auto) overrides the choice of ``True`` and
``None``; an explicit mode or ``False`` is kept.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from typing import Callable, TextIO

from tqdm.auto import tqdm  # a notebook gets its widget, a terminal the text bar

from raise_plugin.errors import PluginWarning, UserError

__all__ = ["MODES", "ENVIRONMENT", "EVERY", "check_progress", "progress_mode", "watched", "open_progress", "LineProgress",
           "NoProgress"]

MODES = ("auto", "bar", "lines", "off")
ENVIRONMENT = "RAISE_PROGRESS"
EVERY = 30.0  # seconds between two lines of the lines mode


def watched(stream: TextIO | None = None) -> bool:
    """A person watches ``stream`` (default stderr): it is a terminal, or this process is a
    notebook's kernel (Jupyter shows the widget whatever the stream)."""
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _from_environment(environ) -> str | None:
    """The mode ``RAISE_PROGRESS`` names, or None (unset, or not a mode: said once as a warning)."""
    value = environ.get(ENVIRONMENT, "").strip().lower()
    if not value:
        return None
    if value not in MODES:
        warnings.warn(f"{ENVIRONMENT}={value!r} is not one of {', '.join(MODES)}: ignored", PluginWarning,
                      stacklevel=3)
        return None
    return value


def check_progress(progress: bool | str | None) -> str | None:
    """What ``progress`` asks for: a mode of ``MODES``, or None (the caller did not say); a value
    that is not ``True``, ``False``, ``None`` or a mode is a ``UserError`` saying so."""
    if progress is None:
        return None
    if isinstance(progress, bool):
        return "auto" if progress else "off"
    if isinstance(progress, str) and progress.lower() in MODES:
        return progress.lower()
    raise UserError(f"progress: must be true, false or one of {', '.join(MODES)}, got {progress!r}")


def progress_mode(progress: bool | str | None = True, stream: TextIO | None = None, environ=None) -> str:
    """``"bar"``, ``"lines"`` or ``"off"``: what ``progress`` asks for, shown on ``stream``
    (default stderr). ``True``/``"auto"``: a bar where a person watches (``watched``), lines
    elsewhere (a log, CI, nohup); ``None``: a bar where a person watches, nothing elsewhere;
    either way ``RAISE_PROGRESS`` (from ``environ``, default ``os.environ``) decides first when
    set. A value that is none of these is a ``UserError``."""
    asked = check_progress(progress)
    if asked in ("bar", "lines", "off"):
        return asked
    chosen = _from_environment(os.environ if environ is None else environ) or asked
    if chosen in ("bar", "lines", "off"):
        return chosen
    if watched(stream):
        return "bar"
    return "lines" if chosen == "auto" else "off"


def open_progress(total: int | None, *, progress: bool | str | None = True, desc: str = "", unit: str = "it",
                  initial: int = 0, leave: bool = True, stream: TextIO | None = None, every: float = EVERY,
                  clock: Callable[[], float] = time.monotonic):
    """A progress object over ``total`` steps in the mode ``progress`` asks for (``progress_mode``):
    a ``tqdm.auto`` bar, a ``LineProgress`` or a ``NoProgress``. Each has ``update(n=1)``,
    ``set_postfix_str(text)``, ``refresh()``, ``close()``, ``n`` and is a context manager."""
    stream = sys.stderr if stream is None else stream
    mode = progress_mode(progress, stream)
    if mode == "bar":
        return tqdm(total=total, initial=initial, desc=desc or None, unit=unit, leave=leave, file=stream,
                    dynamic_ncols=True)
    if mode == "lines":
        return LineProgress(total, desc=desc, unit=unit, initial=initial, stream=stream, every=every, clock=clock)
    return NoProgress(total, initial=initial)


class NoProgress:
    """Progress shown nowhere; it still counts (``n``)."""

    def __init__(self, total: int | None = None, initial: int = 0):
        self.total = total
        self.n = initial

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LineProgress(NoProgress):
    """Progress as plain lines, one at the start, then at most one every ``every`` seconds (of
    ``clock``), and one at ``close``; no carriage return, so a log file reads line by line::

        evaluating on obp: 120/400 inst (30%), 2.1 inst/s, eta 2m13s | gen 3 best 1.55

    Thread-safe: one lock guards the count and the writing."""

    def __init__(self, total: int | None, *, desc: str = "", unit: str = "it", initial: int = 0,
                 stream: TextIO | None = None, every: float = EVERY, clock: Callable[[], float] = time.monotonic):
        super().__init__(total, initial)
        self.desc = desc
        self.unit = unit
        self.every = float(every)
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._initial = initial
        self._postfix = ""
        self._closed = False
        self._lock = threading.Lock()
        self._started = self._last = clock()
        self._write(self.line())

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n
            self._maybe_write()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        with self._lock:
            self._postfix = str(text)
            if refresh:
                self._maybe_write()

    def refresh(self) -> None:
        with self._lock:
            self._maybe_write()

    def close(self) -> None:
        """The last line, always (once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._write(self.line(final=True))

    def line(self, final: bool = False) -> str:
        """The line as it would be written now (``final``: the time taken in place of the eta)."""
        elapsed = max(0.0, self._clock() - self._started)
        done = self.n - self._initial
        rate = done / elapsed if elapsed > 0 and done > 0 else None
        if self.total:
            text = f"{self.n}/{self.total} {self.unit} ({100 * self.n // self.total}%)"
        else:
            text = f"{self.n} {self.unit}"
        if rate is not None:
            text += f", {_number(rate)} {self.unit}/s"
        if final:
            text += f", after {_duration(elapsed)}"
        elif rate is not None and self.total and self.n < self.total:
            text += f", eta {_duration((self.total - self.n) / rate)}"
        if self._postfix:
            text += f" | {self._postfix}"
        return f"{self.desc}: {text}" if self.desc else text

    def _maybe_write(self) -> None:
        if not self._closed and self._clock() - self._last >= self.every:
            self._write(self.line())

    def _write(self, line: str) -> None:
        self._last = self._clock()
        try:
            self._stream.write(line + "\n")
            self._stream.flush()
        except (OSError, ValueError):  # a closed or full stream costs the progress line, not the work
            pass


def _number(rate: float) -> str:
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}" if rate >= 0.1 else f"{rate:.2g}"


def _duration(seconds: float) -> str:
    """``45s``, ``2m13s``, ``1h02m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
