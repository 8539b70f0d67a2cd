"""An EoH-S-style portfolio baseline (after Liu et al., 2026): evolve a small complementary heuristic set.

Training runs on a diverse set: 128 instances (the paper's size) of the five validation
families at the task's nominal sizes, from seeds of their own. No test family and no test
size: the baseline sees no test distribution the other methods never get. It shares its
families (not its instances or sizes) with the validation suite. The population is the heuristic set: survival keeps, greedily, the candidates
that most lower the set's per-instance best metric (complementary population
management); parents for crossover are drawn to complement each other. Scores stay the
host's (the mean over the set), so ``best_single()``, the member with the best mean, is
the heuristic reported, as the paper reports its best single heuristic.
"""
from __future__ import annotations

import logging
import math
from typing import Optional, Sequence

import numpy as np
from llm4ad.base import Function

from tasks.common.families import VALIDATION_FAMILIES

from . import eohs_prompts as prompts
from .base import MethodBase, choose
from .population import finite

__all__ = ["EoHS", "diverse_training_set", "complementary_set", "DIVERSE_COUNT"]

log = logging.getLogger("raise_plugin.methods")

DIVERSE_COUNT = 128  # the paper's EoH-S training set
OPERATORS = ("e1", "e2", "m1", "m2")


# --------------------------------------------------------------------------- training set
def diverse_training_set(task, count: int | None = None, seed: int = 0, **params) -> list:
    """``count`` instances cycling through the five validation families (beta, gamma, weibull,
    bimodal, poisson) at the task's nominal sizes; instance i is drawn from the generator
    seeded with ``(seed, i)``. ``count`` defaults to 128, the paper's size."""
    if count is None:
        count = DIVERSE_COUNT
    if int(count) < 1:
        raise ValueError(f"the diverse training set needs at least one instance, got {count!r}")
    return [task.family_instance(VALIDATION_FAMILIES[i % len(VALIDATION_FAMILIES)], np.random.default_rng([seed, i]), **params)
            for i in range(int(count))]


# --------------------------------------------------------------------------- set selection
def complementary_set(metrics: Sequence[np.ndarray | None], means: Sequence[float], size: int) -> list[int]:
    """Indices of a set of at most ``size`` candidates chosen greedily to minimise the mean over
    instances of the set's best metric (lower is better).

    The first pick is the best mean; each next one is the candidate whose addition lowers the
    set's per-instance best the most (its value); once no candidate lowers it, the rest are
    filled by mean. Candidates without metrics come last, by mean.
    """
    n = len(metrics)
    order = sorted(range(n), key=lambda i: -means[i])
    usable = [i for i in order if metrics[i] is not None]
    chosen: list[int] = []
    best: np.ndarray | None = None
    while len(chosen) < size and usable:
        if best is None:
            pick = usable[0]
        else:
            gains = [float(np.mean(np.maximum(best - metrics[i], 0.0))) for i in usable]
            k = int(np.argmax(gains))  # first maximum: ties go to the better mean
            if gains[k] <= 0.0:
                break
            pick = usable[k]
        chosen.append(pick)
        usable.remove(pick)
        best = metrics[pick].copy() if best is None else np.minimum(best, metrics[pick])
    chosen += [i for i in order if i not in chosen][:size - len(chosen)]
    return chosen


# --------------------------------------------------------------------------- the method
class EoHS(MethodBase):
    """EoH-S-style heuristic-set evolution with the host's constructor shape.

    Args (besides ``MethodBase``'s):
        diverse_instances: the training set: a count of instances to build with
            ``diverse_training_set(task, count, diverse_seed, **diverse_params)`` (``None``: 128), or a list of instances. It replaces ``evaluation.instances``
            (so a robust wrapper's nominal set is this set too).
        diverse_seed, diverse_params: seed and size overrides of the built set (e.g.
            ``{"num_items": 1000}`` for OBP).
        operators: EoH's operators in use, each round in this order (default e1, e2, m1, m2).
    """

    method_name = "eohs"

    def __init__(self, llm, evaluation, profiler=None, max_generations: Optional[int] = None,
                 max_sample_nums: Optional[int] = 100, pop_size: Optional[int] = None, num_samplers: int = 1,
                 num_evaluators: int = 1, *, seed: int = 0, diverse_instances: int | Sequence | None = None,
                 diverse_seed: int = 0, diverse_params: dict | None = None,
                 operators: Sequence[str] = OPERATORS, **kwargs):
        unknown = [op for op in operators if op not in OPERATORS]
        if unknown or not operators:
            raise ValueError(f"operators {list(operators)!r}: choose one or more of {', '.join(OPERATORS)}")
        if not all(hasattr(evaluation, a) for a in ("instances", "metrics", "score_of")):
            raise TypeError("EoHS needs per-instance metrics: an evaluation with instances, metrics() and "
                            f"score_of() (tasks' TaskEvaluation), got {type(evaluation).__name__}")
        if diverse_instances is None or isinstance(diverse_instances, (int, np.integer)):
            task = getattr(evaluation, "task", None)
            if task is None:
                raise TypeError("EoHS builds its diverse set from evaluation.task; pass diverse_instances=[...]")
            instances = diverse_training_set(task, diverse_instances, diverse_seed, **(diverse_params or {}))
        else:
            instances = list(diverse_instances)
            if not instances:
                raise ValueError("diverse_instances is an empty list")
        evaluation.instances = instances
        super().__init__(llm, evaluation, profiler, max_generations, max_sample_nums, pop_size, num_samplers,
                         num_evaluators, seed=seed, **kwargs)
        self.operators = tuple(operators)
        self.diverse_count = len(instances)
        self.best_single_record: dict | None = None

    # -- complementary population management -----------------------------------------
    def _survivors(self):
        def complementary(pool: list, n: int) -> list:
            rows = [self._metrics_of(f, compute=False) if finite(f) else None for f in pool]
            means = [f.score if finite(f) else -math.inf for f in pool]
            return [pool[i] for i in complementary_set(rows, means, n)]

        return complementary

    def set_metrics(self) -> np.ndarray | None:
        """The set's per-instance best metric (lower is better) over the current population."""
        rows = [r for r in (self._metrics_of(f) for f in self._usable()) if r is not None]
        return np.min(rows, axis=0) if rows else None

    def wins(self, members: list[Function]) -> dict[int, int]:
        """id(member) -> instances on which it holds the set's best metric (ties count for all)."""
        rows = {id(f): self._metrics_of(f) for f in members}
        known = [r for r in rows.values() if r is not None]
        if not known:
            return {k: 0 for k in rows}
        best = np.min(known, axis=0)
        return {k: (0 if r is None else int(np.sum(r <= best + 1e-12))) for k, r in rows.items()}

    def best_single(self) -> Function | None:
        """The member with the best mean score on the training set (the heuristic EoH-S reports)."""
        members = self._usable()
        return members[0] if members else None

    def run(self):
        result = super().run()
        best = self.best_single()
        if best is not None:
            self.best_single_record = {"score": float(best.score), "algorithm": best.algorithm or "",
                                       "function": str(best), "training_instances": self.diverse_count}
            log.info("EoH-S best single heuristic: mean score %.6g on %d diverse instances",
                     best.score, self.diverse_count)
        return result

    # -- operators ----------------------------------------------------------------
    def _init_prompt(self) -> str:
        return prompts.init(self._task_description_str, self.diverse_count, self._header)

    def _describe(self, f: Function, wins: dict[int, int]) -> tuple[str, str, float, int]:
        return self.code_of(f), f.algorithm or "", float(f.score), wins.get(id(f), 0)

    def _rank_pick(self, members: list[Function]) -> Function:
        weights = [1.0 / (r + len(members)) for r in range(len(members))]
        return choose(self.rng, members, weights)

    def _complement_of(self, first: Function, members: list[Function]) -> Function:
        """A second parent drawn in proportion to how much it beats ``first`` per instance."""
        others = [f for f in members if f is not first]
        base = self._metrics_of(first)
        gains = []
        for f in others:
            row = self._metrics_of(f)
            gains.append(0.0 if base is None or row is None else float(np.sum(np.maximum(base - row, 0.0))))
        if sum(gains) <= 0:
            return choose(self.rng, others)
        return choose(self.rng, others, gains)

    def _evolve_round(self) -> None:
        for op in self.operators:
            if not self._continue_loop():
                return
            members = self._parents_for(op)
            if members is None:
                continue
            wins = self.wins(members)
            n, task, header = self.diverse_count, self._task_description_str, self._header
            first = self._rank_pick(members)
            if op in ("e1", "e2"):
                second = self._complement_of(first, members)
                parents = [self._describe(first, wins), self._describe(second, wins)]
                prompt = (prompts.e1 if op == "e1" else prompts.e2)(task, parents, n, header)
            else:
                prompt = (prompts.m1 if op == "m1" else prompts.m2)(task, self._describe(first, wins), n, header)
            self._sample(prompt, op)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state.update(diverse_count=self.diverse_count, best_single=self.best_single_record)
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.best_single_record = state.get("best_single")
