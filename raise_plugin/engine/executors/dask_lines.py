"""Where Dask's own lines go: off the console of the commands, which say in their own lines what failed
(``off_console``); and what a worker of a LocalCluster this process starts does first (``dask_setup``, the
Dask preload of its workers). Imports nothing of Dask."""
from __future__ import annotations

import logging
import warnings

from ...errors import SandboxNote

__all__ = ["off_console", "dask_setup", "PRELOAD"]

PRELOAD = __name__  # the module a LocalCluster's workers preload (``distributed.worker.preload``)
# once distributed's own handlers are gone, a line with no handler of this process to go to goes nowhere, not to the
# console by logging's last resort
_NOWHERE = logging.NullHandler()


def off_console() -> None:
    """Dask's lines (distributed's logging) go where this process's other lines go (a run's ``run_log.txt``;
    a compare adds its ``dask_log.txt``), not to stderr, where distributed's own handlers write them: a
    worker restarted, a job that failed on a worker (with its traceback), a client reconnecting."""
    names = ["distributed", *sorted(n for n in logging.root.manager.loggerDict if n.startswith("distributed."))]
    for name in names:
        logger = logging.getLogger(name)
        for handler in list(logger.handlers):
            if type(handler) is logging.StreamHandler:  # distributed's own, to stderr (a file's is a subclass)
                logger.removeHandler(handler)
        logger.propagate = True
    if _NOWHERE not in logging.getLogger("distributed").handlers:
        logging.getLogger("distributed").addHandler(_NOWHERE)


def dask_setup(worker) -> None:
    """A worker of a LocalCluster this process started, as it starts: its Dask lines off the console it shares
    with this process, and the sandbox's note, which this process says once itself, not said again."""
    off_console()
    warnings.simplefilter("ignore", SandboxNote)
