"""The run's progress bar (``tqdm.auto``: a widget in a notebook, text in a terminal), a callback."""
from __future__ import annotations

import sys

from tqdm.auto import tqdm

from .budget import llm_usage_total
from .hooks import Callback

__all__ = ["ProgressBar", "show_progress_by_default"]


def show_progress_by_default() -> bool:
    """A run started from Python shows its bar in a terminal or a notebook, not in a pipe or a log."""
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


class ProgressBar(Callback):
    """A bar over samples: generation, best robust score (minus the metric: higher is better),
    instance-set size, and the LLM requests and cost when a ledger counts them."""

    checkpointed = False

    def __init__(self, total: int, initial: int = 0, enabled: bool = True):
        self._bar = tqdm(total=total, initial=initial, unit="sample", disable=not enabled, file=sys.stderr,
                         dynamic_ncols=True)

    def _post(self, method, snapshot):
        best = snapshot.best
        text = f"gen {snapshot.generation} best {best.score:.4g} set {snapshot.instance_set_size}" if best else \
            f"gen {snapshot.generation} set {snapshot.instance_set_size}"
        used = llm_usage_total(method)
        if used["requests"]:
            text += f" llm {used['requests']} requests ${used['cost_usd']:.3f}"
        self._bar.set_postfix_str(text, refresh=False)

    def on_run_start(self, method, snapshot):
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
