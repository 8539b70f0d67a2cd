"""What a run made itself, as callbacks that close it when the run ends or fails: the evaluation
workers it started (with the compiled path's tally recorded first, ``--jit``) and the LLM back-end
it made from its settings (its recording file)."""
from __future__ import annotations

from pathlib import Path

from .hooks import Callback

__all__ = ["RunOwned", "OwnedExecutor", "CompiledPathReport", "OwnedLLM"]


class RunOwned(Callback):
    """A part the run made itself: finished (``finish``: recorded where it has a record, then closed)
    when the run ends or fails; ``close`` alone where the run could not be built."""

    checkpointed = False

    def on_run_end(self, method, snapshot) -> None:
        self.finish()

    def on_exception(self, method, snapshot, exc) -> None:
        self.finish()

    def finish(self) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class OwnedExecutor(RunOwned):
    """The workers a run started itself (its sandbox's limits are not the engine's own)."""

    def __init__(self, executor, directory: Path):
        self.executor = executor
        self.directory = Path(directory)

    def close(self) -> None:
        if hasattr(self.executor, "shutdown"):
            self.executor.shutdown()


class CompiledPathReport(OwnedExecutor):
    """With ``--jit``: at the end of the run, how many programs ran compiled and how many stayed
    on Python (the executor's ``CompiledTally``, written to ``compiled.json`` in the run directory;
    ``line`` for the summary); then stops the run's workers."""

    def __init__(self, executor, directory: Path):
        super().__init__(executor, directory)
        self.line = ""

    def finish(self) -> None:
        tally = getattr(self.executor, "compiled", None)
        if tally is not None:
            self.line = tally.write(self.directory)
        self.close()


class OwnedLLM(RunOwned):
    """The back-end a run made from its ``llm`` settings: its recording (``--record``) closed with the run,
    so a process that runs many (a notebook, compare's job processes) holds none of their files."""

    def __init__(self, llm):
        self.llm = llm

    def close(self) -> None:
        closing = getattr(self.llm, "close", None)
        if closing is not None:
            closing()
