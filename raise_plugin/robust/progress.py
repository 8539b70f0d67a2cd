"""The run's progress as a callback: a bar in a terminal or a notebook, plain lines in a log
(``raise_plugin.progress`` chooses)."""
from __future__ import annotations

import time
from typing import Callable, TextIO

from raise_plugin.progress import EVERY, open_progress, progress_mode

from .budget import llm_usage_total
from .hooks import Callback

__all__ = ["ProgressBar", "show_progress_by_default"]


def show_progress_by_default() -> bool:
    """A run started from Python shows its progress in a terminal or a notebook, not in a pipe or
    a log, unless ``RAISE_PROGRESS`` says otherwise."""
    return progress_mode(None) != "off"


class ProgressBar(Callback):
    """Progress over samples: generation, the best program's metric over the set it trained on (lower is better),
    instance-set size, and the LLM requests and cost when a ledger counts them.

    ``enabled``: ``True`` (a bar where a person watches, lines elsewhere), ``False``, or a mode of
    ``raise_plugin.progress.MODES``; ``stream``, ``every`` and ``clock`` as ``open_progress``'s."""

    checkpointed = False

    def __init__(self, total: int, initial: int = 0, enabled: bool | str | None = True, *,
                 stream: TextIO | None = None, every: float = EVERY, clock: Callable[[], float] = time.monotonic):
        self._opening = dict(progress=enabled, desc="run", unit="sample", initial=initial, stream=stream, every=every,
                             clock=clock)
        self._bar = open_progress(total, **self._opening)
        self._total, self._shown = total, False

    def reset(self) -> None:
        """A bar of its own for a new run, where an earlier run showed (and closed) this one's."""
        if self._shown:
            self._bar = open_progress(self._total, **self._opening)
            self._shown = False

    def _post(self, method, snapshot):
        best = snapshot.best
        text = f"gen {snapshot.generation} best {0.0 - best.score:.4g} set {snapshot.instance_set_size}" if best else \
            f"gen {snapshot.generation} set {snapshot.instance_set_size}"
        used = llm_usage_total(method)
        if used["requests"]:
            text += f" llm {used['requests']} requests ${used['cost_usd']:.3f}"
        self._bar.set_postfix_str(text, refresh=False)

    def on_run_start(self, method, snapshot):
        self._shown = True
        self._post(method, snapshot)

    def on_sample_evaluated(self, method, snapshot, sample):
        self._post(method, snapshot)
        self._bar.update(snapshot.samples - self._bar.n)

    def on_instances_updated(self, method, snapshot, update):
        self._post(method, snapshot)
        self._bar.refresh()

    def on_run_end(self, method, snapshot):
        self._post(method, snapshot)
        self.close()

    def close(self) -> None:
        self._bar.close()
