"""``HostProfiler``: the host's own ``EoHProfiler`` logs of a run (``RUN_DIR/host``), written quietly;
``QuietProfiler``: one that writes nothing."""
from __future__ import annotations

import contextlib
import io
import logging
import sys
from pathlib import Path
from typing import Callable

from llm4ad.method.eoh import EoHProfiler
from llm4ad.tools.profiler import ProfilerBase
from tqdm.auto import tqdm

from ..credentials import HiddenCredentials
from ..durable import WriteFailed
from ..llm.openai_request import notices

__all__ = ["HostProfiler", "QuietProfiler", "ConsoleNotices"]


class ConsoleNotices(logging.Handler):
    """The endpoint's notices (``llm.openai_request.notices``: waiting, long back-offs, failed calls) on
    stderr as they happen, above a progress bar: the host's log takes the root logger's lines to its
    file alone, where Python would otherwise print a warning to stderr itself."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.addFilter(HiddenCredentials())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            tqdm.write(self.format(record), file=sys.stderr)  # as Python prints a warning itself
        except Exception:  # noqa: BLE001 - a notice never stops a run (a closed stream, a bad argument)
            self.handleError(record)

    @classmethod
    def shown(cls) -> None:
        """Show the notices on stderr from now on in this process (once, whatever the runs)."""
        if not any(isinstance(handler, cls) for handler in notices.handlers):
            notices.addHandler(cls())


class HostProfiler(EoHProfiler):
    """The host's ``EoHProfiler`` writing its usual logs, without printing every sample to stdout.

    A log the system refuses (a full or read-only disk, a folder gone) goes to ``on_refused`` (the
    run's ``fail``: the run stops as when a record of its own is refused) and the sample goes on to
    the run: raised in the host's loop, which swallows it, it cost the sample, and ten in a row
    stopped the run as if the LLM had given ten unusable answers."""

    on_refused: Callable[[str], None] | None = None

    def __init__(self, log_dir, **kwargs):
        type(self)._cur_gen = 0  # a class attribute in the host: reset it per run
        self._folder = Path(log_dir).resolve()  # now: a relative path no longer resolves once the cwd is removed
        super().__init__(log_dir, create_random_path=False, log_style="simple", **kwargs)

    def register_function(self, function, *, resume_mode=False):
        with self._refusals():
            super().register_function(function, resume_mode=resume_mode)

    def register_population(self, pop):
        with self._refusals():
            super().register_population(pop)

    @contextlib.contextmanager
    def _refusals(self):
        try:
            yield
        except OSError as exc:  # writing its logs is all it does: any error of the system's is a write refused
            if self.on_refused is None:  # (its folder gone with the run directory, renamed or removed, too)
                raise
            self.on_refused(str(WriteFailed(exc.filename, exc)))

    def _create_log_path(self):
        with contextlib.redirect_stdout(io.StringIO()):
            super()._create_log_path()
        root = logging.getLogger("root")
        for handler in root.handlers[:]:
            if type(handler) is logging.StreamHandler:
                root.removeHandler(handler)
            else:  # its file (run_log.txt) takes every library's lines: the HTTP client's hold the base URL
                handler.addFilter(HiddenCredentials())
        ConsoleNotices.shown()

    def _record_and_print_verbose(self, function, *, resume_mode=False):
        super()._record_and_print_verbose(function, resume_mode=True)

    def finish(self):
        super().finish()
        self.close()

    def close(self) -> None:
        """Close the log file the host's logger writes (``run_log.txt``): the host removes a handler
        only when the next profiler is made, and never closes it, so each run's file stayed open."""
        logger = getattr(self, "_logger_txt", None)
        for handler in list(getattr(logger, "handlers", ())):
            if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == self._folder:
                logger.removeHandler(handler)
                handler.close()


class QuietProfiler(ProfilerBase):
    """Counts samples and writes nothing; attached when the caller passes ``profiler=None``."""

    def __init__(self):
        super().__init__(log_dir=None, create_random_path=False, method_name="robust")

    def record_parameters(self, llm, prob, method):
        self._parameters = [llm, prob, method]

    def register_function(self, function, *, resume_mode=False):
        with self._register_function_lock:
            self.__class__._num_samples += 1
