"""The methods' population: llm4ad's ``Population`` with duplicates found by code and a pluggable survival rule."""
from __future__ import annotations

import math
from typing import Callable

from llm4ad.base import Function
from llm4ad.method.eoh.population import Population

__all__ = ["MethodPopulation", "Survivors", "best_by_score", "finite"]

Survivors = Callable[[list, int], list]


def finite(func: Function) -> bool:
    s = func.score
    return s is not None and isinstance(s, (int, float)) and math.isfinite(s)


def best_by_score(pool: list, n: int) -> list:
    """The host's survival rule: the ``n`` best scores (stable: earlier members win ties)."""
    return sorted(pool, key=lambda f: f.score, reverse=True)[:n]


class MethodPopulation(Population):
    """llm4ad's ``Population`` with duplicates found by code and a pluggable survival rule.

    - The host also calls two programs with equal scores duplicates; here only equal code is.
    - ``survivors(pool, pop_size)`` picks the next population from members plus pending
      samples (default: the best scores, as the host). PartEvo keeps every niche's best,
      EoH-S keeps a complementary set.
    - A survival with nothing new is not a generation (the host's ``run()`` calls
      ``survival()`` once more after initialisation).

    Under ``robust()`` the wrapper's ``RobustPopulationMixin`` is put in front of this class:
    its locking, duplicate check (by program text) and generation events apply, and its
    ``survival()`` calls this one.
    """

    def __init__(self, pop_size, generation: int = 0, pop=None, *, survivors: Survivors | None = None):
        super().__init__(pop_size, generation, pop)
        self._survivors = survivors

    def has_duplicate_function(self, func) -> bool:
        key = str(func)
        return any(str(f) == key for f in self._population + self._next_gen_pop)

    def survival(self):
        if self._generation > 0 and not self._next_gen_pop:
            return
        pool = self._population + self._next_gen_pop
        for f in pool:
            if not finite(f) and f.score != float("-inf"):
                f.score = float("-inf")
        rule = self._survivors or best_by_score
        self._population = list(rule(pool, self._pop_size))[:self._pop_size]
        self._next_gen_pop = []
        self._generation += 1
