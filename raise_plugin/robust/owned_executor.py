"""The evaluation workers a run started itself, as a callback: stopped when the run ends or fails,
with the compiled path's tally recorded first (``--jit``)."""
from __future__ import annotations

from pathlib import Path

from .hooks import Callback

__all__ = ["OwnedExecutor", "CompiledPathReport"]


class OwnedExecutor(Callback):
    """The workers a run started itself (its sandbox's limits are not the engine's own): stopped
    when the run ends, or fails."""

    checkpointed = False

    def __init__(self, executor, directory: Path):
        self.executor = executor
        self.directory = Path(directory)

    def on_run_end(self, method, snapshot) -> None:
        self._close()

    def on_exception(self, method, snapshot, exc) -> None:
        self._close()

    def _close(self) -> None:
        if hasattr(self.executor, "shutdown"):
            self.executor.shutdown()


class CompiledPathReport(OwnedExecutor):
    """With ``--jit``: at the end of the run, how many programs ran compiled and how many stayed
    on Python (the executor's ``CompiledTally``, written to ``compiled.json`` in the run directory;
    ``line`` for the summary); then stops the run's workers."""

    def __init__(self, executor, directory: Path):
        super().__init__(executor, directory)
        self.line = ""

    def _close(self) -> None:
        tally = getattr(self.executor, "compiled", None)
        if tally is not None:
            self.line = tally.write(self.directory)
        super()._close()
