"""Start a short robust offline run and kill it with SIGKILL at a chosen point (a test's child process).

    python killed_run.py OUT call:N        the N-th LLM call, before it is answered
    python killed_run.py OUT sample:N      the N-th sample, before the run directory records it
    python killed_run.py OUT generation:N  the end of generation N, after its refresh, before its checkpoint

A third argument names the method (``eoh`` when left out); a fourth, ``trace``, adds the validation trace.
"""
from __future__ import annotations

import os
import signal
import sys

from raise_plugin.robust.hooks import Callback
from raise_plugin.config import RunConfig
from raise_plugin.llm import OfflineSampler
from raise_plugin.runner import start_run


def config(out: str, **kw) -> RunConfig:
    """The run both the killed and the uninterrupted process make."""
    base = dict(task="ovrp", robust=True, budget=20, pop_size=4, tau=1, nominal=1, seed=0, out=out,
                inner_population=4, inner_generations=2, validation_trace=False, host_profiler=False)
    base.update(kw)
    return RunConfig(**base)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class KillAt(Callback):
    def __init__(self, event: str, n: int):
        self.event, self.n = event, n

    def on_sample_evaluated(self, method, snapshot, sample):
        if self.event == "sample" and sample.sample == self.n:
            die()

    def on_generation_end(self, method, snapshot):
        if self.event == "generation" and snapshot.generation == self.n:
            die()


class KillingSampler(OfflineSampler):
    def __init__(self, n: int, **kw):
        super().__init__(**kw)
        self.n, self.calls = n, 0

    def draw_sample(self, prompt, *args, **kwargs):
        self.calls += 1
        if self.calls == self.n:
            die()
        return super().draw_sample(prompt, *args, **kwargs)


if __name__ == "__main__":
    out, point = sys.argv[1], sys.argv[2]
    event, n = point.split(":")
    cfg = config(out, method=sys.argv[3] if len(sys.argv) > 3 else "eoh", validation_trace=sys.argv[4:] == ["trace"])
    llm = KillingSampler(int(n), seed=cfg.seed, task=cfg.task) if event == "call" else None
    start_run(cfg, llm=llm, callbacks=[KillAt(event, int(n))]).run()
    sys.exit(3)  # never reached: the run is killed first
