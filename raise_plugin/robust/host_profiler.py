"""``HostProfiler``: the host's own ``EoHProfiler`` logs of a run (``RUN_DIR/host``), written quietly."""
from __future__ import annotations

import contextlib
import io
import logging

from llm4ad.method.eoh import EoHProfiler

__all__ = ["HostProfiler"]


class HostProfiler(EoHProfiler):
    """The host's ``EoHProfiler`` writing its usual logs, without printing every sample to stdout."""

    def __init__(self, log_dir, **kwargs):
        type(self)._cur_gen = 0  # a class attribute in the host: reset it per run
        super().__init__(log_dir, create_random_path=False, log_style="simple", **kwargs)

    def _create_log_path(self):
        with contextlib.redirect_stdout(io.StringIO()):
            super()._create_log_path()
        root = logging.getLogger("root")
        for handler in root.handlers[:]:
            if type(handler) is logging.StreamHandler:
                root.removeHandler(handler)

    def _record_and_print_verbose(self, function, *, resume_mode=False):
        super()._record_and_print_verbose(function, resume_mode=True)
