"""Test doubles for robust runs: a scripted LLM for OBP and a small, fast adversary."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from llm4ad.base import LLM

from raise_plugin.engine import evaluate_heuristic
from tasks import get_task
from tasks.obp.instances import weibull_instances

# OBP at a tenth of its length (tests/_small_obp.py), by file reference: for tests about runs and their
# records, where the instances' size is incidental
SMALL_OBP = f"{Path(__file__).with_name('_small_obp.py')}:SmallOBP"

BODIES = (
    "return -(bins - item) + {a:.3f} * bins",
    "return -np.abs(bins - {a:.3f} * item)",
    "return -(bins - item) ** 2 + {a:.3f} * (bins == bins.max())",
    "return {a:.3f} * bins - np.maximum(bins - item, 0.0)",
    "return -(bins - item) / (bins + {a:.3f})",
)


class ScriptedLLM(LLM):
    """Answers any EoH prompt with a variant of a few OBP heuristics (seeded, thread-safe).

    Every ``fail_every``-th answer returns a wrong shape, so invalid samples occur too.
    """

    def __init__(self, seed: int = 0, fail_every: int = 7):
        super().__init__()
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._fail_every = fail_every
        self.calls = 0

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        with self._lock:
            self.calls += 1
            if self._fail_every and self.calls % self._fail_every == 0:
                body = "return bins[:1]"
            else:
                body = BODIES[int(self._rng.integers(len(BODIES)))].format(a=float(self._rng.uniform(0.01, 2.0)))
        return ("{A variant of best fit.} ```python\nimport numpy as np\n"
                f"def priority(item, bins):\n    {body}\n```")


@dataclass
class FakeResult:
    instance: dict
    distribution: np.ndarray
    genes: np.ndarray
    nearest: int
    distance: float
    metric: float


def fake_search(task, priority, epsilon, *, nominal=None, seed=0, inner_population=8, inner_generations=4, **switches):
    """A stand-in for the inner GA: a few seeded draws around the nominal items, keep the worst."""
    rng = np.random.default_rng(seed)
    nominal = nominal or task.nominal_instances()
    worst = None
    for _ in range(inner_population):
        base = nominal[int(rng.integers(len(nominal)))]
        items = np.clip(base["items"] + rng.integers(-3, 4, base["items"].size), 1, base["capacity"])
        inst = {"capacity": base["capacity"], "num_items": int(items.size), "items": items.astype(np.int64)}
        m = evaluate_heuristic(task, priority, inst)  # in a worker, through its judge
        if worst is None or m > worst.metric:
            p = task.histogram(inst)
            worst = FakeResult(inst, p, rng.random(18), 0, float(np.abs(p - task.histogram(base)).mean()), m)
    return worst


def small_obp_evaluation(count: int = 3, num_items: int = 300, **kwargs):
    task = get_task("obp")
    return task.evaluation(instances=weibull_instances(count=count, num_items=num_items), **kwargs)


def hanging_search(task, priority, epsilon, **kwargs):
    """An inner search that never ends (its caller's time limit must cut it)."""
    import time
    time.sleep(60)


def hoarding_search(task, priority, epsilon, **kwargs):
    """An inner search that allocates far past the sandbox's memory cap."""
    hoard = np.ones(int(20e9 // 8))
    return hoard


def secret_seeing_search(task, priority, epsilon, **kwargs):
    """The stand-in search, refusing to run where it can see a secret of the environment."""
    import os
    seen = sorted(k for k in os.environ if any(w in k.upper() for w in ("KEY", "TOKEN", "SECRET")))
    if seen:
        raise RuntimeError(f"generated code could read {', '.join(seen)}")
    return fake_search(task, priority, epsilon, **kwargs)
