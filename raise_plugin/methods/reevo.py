"""ReEvo (Ye et al., NeurIPS 2024): reflective evolution, as a host-compatible method (a subclass of llm4ad's EoH).

A round: ``crossovers_per_round`` times {select a pair -> short-term reflection (worse vs
better) -> crossover guided by it}; then a long-term reflection condensing the previous
one and the round's short-term reflections (every ``long_term_every`` rounds); then
``mutations_per_round`` elitist mutations of the best heuristic guided by the long-term
reflection. Survival keeps the best ``pop_size`` (the host's rule). Reflections are LLM
calls but not samples; they are part of the state (``state_dict``).
"""
from __future__ import annotations

import threading
from typing import Optional

from . import reevo_prompts as prompts
from .base import MethodBase, choose

__all__ = ["ReEvo"]


class ReEvo(MethodBase):
    """ReEvo with the host's constructor shape.

    Args (besides ``MethodBase``'s):
        crossovers_per_round: crossovers per round (``None``: ``max(1, pop_size // 2)``).
        mutations_per_round: elitist mutations per round (the paper mutates a few times per
            generation; default 2).
        long_term_every: rounds between long-term reflections (default 1: every round).
    """

    method_name = "reevo"

    def __init__(self, llm, evaluation, profiler=None, max_generations: Optional[int] = None,
                 max_sample_nums: Optional[int] = 100, pop_size: Optional[int] = None, num_samplers: int = 1,
                 num_evaluators: int = 1, *, seed: int = 0, crossovers_per_round: Optional[int] = None,
                 mutations_per_round: int = 2, long_term_every: int = 1, **kwargs):
        super().__init__(llm, evaluation, profiler, max_generations, max_sample_nums, pop_size, num_samplers,
                         num_evaluators, seed=seed, **kwargs)
        for name, value, low in (("mutations_per_round", mutations_per_round, 0),
                                 ("long_term_every", long_term_every, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if crossovers_per_round is not None and (not isinstance(crossovers_per_round, int)
                                                 or crossovers_per_round < 1):
            raise ValueError(f"crossovers_per_round must be None or an integer >= 1, got {crossovers_per_round!r}")
        self.crossovers_per_round = crossovers_per_round or max(1, self._pop_size // 2)
        self.mutations_per_round = mutations_per_round
        self.long_term_every = long_term_every
        # reflections: the run's state
        self.long_term_reflection = ""
        self.short_term_reflections: list[str] = []  # since the last long-term reflection
        self.reflection_log: list[dict] = []  # every reflection, in order (checkpoints keep the last 100)
        self.rounds = 0
        self._long_lock = threading.Lock()

    # -- prompts ------------------------------------------------------------------
    def _init_prompt(self) -> str:
        return prompts.init(self._task_description_str, self.code_of(self._function_to_evolve), self._header)

    # -- one round ----------------------------------------------------------------
    def _evolve_round(self) -> None:
        for _ in range(self.crossovers_per_round):
            if not self._continue_loop():
                return
            self._crossover_step()
        if not self._continue_loop():
            return
        self._long_term_step()
        for _ in range(self.mutations_per_round):
            if not self._continue_loop():
                return
            self._mutation_step()

    def select_pair(self):
        """(worse, better): two members drawn uniformly among pairs with different scores
        (any two members when every score is equal); ``None`` with fewer than two usable ones."""
        members = self._usable()
        if len(members) < 2:
            return None
        pairs = [(i, j) for i in range(len(members)) for j in range(i + 1, len(members))
                 if members[i].score != members[j].score]
        if not pairs:
            pairs = [(i, j) for i in range(len(members)) for j in range(i + 1, len(members))]
        i, j = choose(self.rng, pairs)
        return members[j], members[i]  # best-first order: i is the better one

    def _crossover_step(self) -> None:
        pair = self.select_pair()
        if pair is None:
            self._mutation_step()
            return
        worse, better = pair
        name = self.function_name
        hint = self._ask_text(prompts.short_term_reflection(
            self._task_description_str, name, self.code_of(worse), worse.score, self.code_of(better),
            better.score), "short_term_reflection", max_chars=400)
        self._log_reflection("short_term", hint)
        if not self._continue_loop():
            return
        self._sample(prompts.crossover(self._task_description_str, name, self.code_of(worse), self.code_of(better),
                                       hint, self._header), "crossover")

    def _long_term_step(self) -> None:
        with self._long_lock:
            with self._state_lock:
                self.rounds += 1
                if self.rounds % self.long_term_every:
                    return
                recent = list(self.short_term_reflections)
                prior = self.long_term_reflection
            if not recent:
                return
            text = self._ask_text(prompts.long_term_reflection(self._task_description_str, prior, recent),
                                  "long_term_reflection")
            with self._state_lock:
                self.long_term_reflection = text
                del self.short_term_reflections[:len(recent)]
            self._log_reflection("long_term", text, keep=False)

    def _mutation_step(self) -> None:
        members = self._usable()
        if not members:  # nothing usable yet: create instead
            self._sample(self._init_prompt(), "init")
            return
        elite = members[0]
        with self._state_lock:
            reflection = self.long_term_reflection or (self.short_term_reflections[-1]
                                                       if self.short_term_reflections else "")
        self._sample(prompts.mutation(self._task_description_str, self.function_name, self.code_of(elite),
                                      elite.score, reflection, self._header), "mutation")

    def _log_reflection(self, kind: str, text: str, keep: bool = True) -> None:
        with self._state_lock:
            if keep:
                self.short_term_reflections.append(text)
            self.reflection_log.append({"kind": kind, "generation": self._population.generation,
                                        "samples": self._tot_sample_nums, "text": text})

    # -- checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        with self._state_lock:
            state.update(long_term_reflection=self.long_term_reflection,
                         short_term_reflections=list(self.short_term_reflections),
                         reflection_log=list(self.reflection_log[-100:]), rounds=self.rounds)
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        with self._state_lock:
            self.long_term_reflection = str(state.get("long_term_reflection", ""))
            self.short_term_reflections = list(state.get("short_term_reflections", []))
            self.reflection_log = list(state.get("reflection_log", []))
            self.rounds = int(state.get("rounds", 0))
