"""The inner GA as an ask/tell optimiser over genes in [0, 1]^D (larger score = more adversarial).

Paper defaults: population P_in = 8 uniform random gene vectors, truncation to the
top half, uniform crossover (0.5) between pairs of the kept parents, Gaussian
mutation N(0, 0.12^2) with probability 0.35 per gene, clipped to [0, 1].

How the next population of P_in is formed (our reading of the paper's Algorithm
"Inner Adversarial Instance Search"): the population is sorted by score and cut to
its top ``floor(P_in / 2)`` ("keep top half"; these parents stay in the population,
with their scores); the remaining ``P_in - floor(P_in / 2)`` places go to offspring,
one per pair of kept parents ("for each pair ... create offspring"), the pairs
drawn without replacement from all pairs of parents (4 parents give 6 pairs, of
which 4 are used; when there are more places than pairs the pairs are reused).
Each offspring takes every gene from either parent with probability 0.5, then
mutates. The algorithm re-evaluates the kept parents every generation; we do not:
under a common sampling seed their instance and score would be identical, so
``ask()`` returns only the individuals that still need a score. With the defaults
a search costs 8 + 3 x 4 = 20 evaluations for G_in = 4 generations.

Any optimiser with the same ``ask()`` / ``tell()`` pair can replace this one.
"""
from __future__ import annotations

from concurrent.futures import Future
from itertools import combinations
from typing import Any, Callable, Protocol

import numpy as np

from raise_plugin.settings import default

__all__ = ["AskTell", "InnerGA", "evaluate_batch", "optimise"]


class AskTell(Protocol):
    """What the search needs from an optimiser."""

    def ask(self) -> np.ndarray:
        """Gene vectors (one per row) that need a score."""

    def tell(self, genes: np.ndarray, scores) -> None:
        """The scores of the rows returned by the last ``ask()`` (larger = better for the optimiser)."""


class InnerGA:
    """Truncation-selection GA with uniform crossover and Gaussian mutation (ask/tell)."""

    def __init__(self, dimension: int, rng: np.random.Generator, *, population: int = default("inner_population"),
                 crossover_rate: float = 0.5, mutation_rate: float = 0.35, mutation_sigma: float = 0.12):
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {dimension}")
        if population < 2:
            raise ValueError(f"population (P_in) must be >= 2, got {population}")
        for name, value in (("crossover_rate", crossover_rate), ("mutation_rate", mutation_rate)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")
        if mutation_sigma < 0:
            raise ValueError(f"mutation_sigma must be >= 0, got {mutation_sigma}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy.random.Generator")
        self.dimension = int(dimension)
        self.population = int(population)
        self.crossover_rate = float(crossover_rate)
        self.mutation_rate = float(mutation_rate)
        self.mutation_sigma = float(mutation_sigma)
        self.rng = rng
        self.generation = 0  # completed ask/tell rounds
        self._parents = np.empty((0, self.dimension))
        self._parent_scores = np.empty(0)
        self._pending: np.ndarray | None = None

    @property
    def parents(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept individuals (best first) and their scores."""
        return self._parents.copy(), self._parent_scores.copy()

    def ask(self) -> np.ndarray:
        if self._pending is None:
            if self.generation == 0:
                self._pending = self.rng.random((self.population, self.dimension))
            else:
                self._pending = self._offspring(self.population - len(self._parents))
        return self._pending.copy()

    def tell(self, genes, scores) -> None:
        if self._pending is None:
            raise RuntimeError("tell() without a pending ask()")
        genes = np.asarray(genes, dtype=float)
        scores = np.asarray(scores, dtype=float)
        if genes.shape != self._pending.shape or not np.array_equal(genes, self._pending):
            raise ValueError("tell() must receive exactly the genes of the last ask()")
        if scores.shape != (len(genes),):
            raise ValueError(f"expected {len(genes)} scores, got shape {scores.shape}")
        scores = np.where(np.isnan(scores), -np.inf, scores)  # an unscorable candidate ranks last
        pool = np.vstack([self._parents, genes])
        pool_scores = np.concatenate([self._parent_scores, scores])
        order = np.argsort(-pool_scores, kind="stable")[: self.population // 2]
        self._parents, self._parent_scores = pool[order], pool_scores[order]
        self._pending = None
        self.generation += 1

    def _offspring(self, count: int) -> np.ndarray:
        # a single parent (P_in of 2 or 3) can only pair with itself: mutation alone varies it
        pairs = list(combinations(range(len(self._parents)), 2)) or [(0, 0)]
        chosen = []
        while len(chosen) < count:
            take = min(count - len(chosen), len(pairs))
            chosen.extend(pairs[k] for k in self.rng.permutation(len(pairs))[:take])
        children = np.empty((count, self.dimension))
        for row, (i, j) in enumerate(chosen):
            from_i = self.rng.random(self.dimension) < self.crossover_rate
            child = np.where(from_i, self._parents[i], self._parents[j])
            mutate = self.rng.random(self.dimension) < self.mutation_rate
            noise = self.rng.normal(0.0, self.mutation_sigma, self.dimension)
            children[row] = np.clip(child + mutate * noise, 0.0, 1.0)
        return children

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume (the Generator's state included)."""
        return {"generation": self.generation, "parents": self._parents.copy(),
                "parent_scores": self._parent_scores.copy(),
                "pending": None if self._pending is None else self._pending.copy(),
                "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self._parents = np.asarray(state["parents"], dtype=float).reshape(-1, self.dimension)
        self._parent_scores = np.asarray(state["parent_scores"], dtype=float)
        self._pending = None if state["pending"] is None else np.asarray(state["pending"], dtype=float)
        self.rng.bit_generator.state = state["rng"]


# calls per worker a batch is grouped into: few enough that the cost of a call (shipping the
# program, compiling it again, the sandbox's checks after it) stays small beside the
# evaluations it carries, enough that one slow evaluation does not hold up a whole worker's share
CALLS_PER_WORKER = 4


def evaluate_batch(fn: Callable, arguments: list[tuple], executor=None) -> list:
    """``[fn(*a) for a in arguments]``, in order; through ``executor.submit`` when given.

    Any object whose ``submit(fn, *args)`` returns a ``concurrent.futures.Future``-like
    object (``.result()``) works: thread or process pools, a Dask or Ray client. An executor
    that says how many calls it runs at once (``workers``, or ``_max_workers`` for a
    ``concurrent.futures`` pool) gets the batch as at most ``CALLS_PER_WORKER`` calls per
    worker, each running consecutive arguments in turn; one that does not say gets one
    call per argument. The result is the same either way: each ``fn(*a)`` depends only on ``a``.
    """
    if executor is None:
        return [fn(*a) for a in arguments]
    calls = len(arguments)
    width = _width(executor)
    if width is not None:
        calls = min(calls, CALLS_PER_WORKER * width)
    if calls >= len(arguments):
        futures: list[Future] = [executor.submit(fn, *a) for a in arguments]
        return [f.result() for f in futures]
    bounds = np.linspace(0, len(arguments), calls + 1).round().astype(int)
    futures = [executor.submit(_run_in_turn, fn, arguments[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    return [value for f in futures for value in f.result()]


def _width(executor) -> int | None:
    """How many calls ``executor`` runs at once, if it says."""
    n = getattr(executor, "workers", None)
    if n is None:
        n = getattr(executor, "_max_workers", None)
    try:
        return max(1, int(n)) if n is not None else None
    except (TypeError, ValueError):
        return None


def _run_in_turn(fn: Callable, arguments: list[tuple]) -> list:
    """One call of a grouped batch (module level, so process pools can ship it)."""
    return [fn(*a) for a in arguments]


def optimise(optimiser: AskTell, evaluate: Callable[[np.ndarray], float], generations: int,
             executor=None) -> tuple[np.ndarray, float]:
    """Run ``generations`` ask/tell rounds of ``evaluate`` (genes -> score); the best ever seen."""
    best_genes, best_score = None, -np.inf
    for _ in range(generations):
        genes = optimiser.ask()
        scores = evaluate_batch(evaluate, [(g,) for g in genes], executor)
        optimiser.tell(genes, scores)
        for g, s in zip(genes, scores):
            if best_genes is None or s > best_score:
                best_genes, best_score = np.array(g), float(s)
    return best_genes, best_score
