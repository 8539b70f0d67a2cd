"""A MoH-style baseline (after Shi et al., 2026): multi-task training under a meta-optimised optimiser.

MoH's two parts, as the RAISE paper describes them:

- **Multi-task training.** Every candidate is scored on several task variants at once; here
  two training distributions: the nominal set and as many instances of a second family (a
  validation family, ``gamma`` by default, at the nominal sizes; never a test family). Each
  candidate costs twice EoH's instance evaluations, the overhead the paper's cost table gives.
  Scores are means over both variants; prompts show each parent's mean per variant.
- **Meta-optimisation.** MoH's LLM writes and refines the optimiser that evolves heuristics.
  Here an optimiser is a *plan*: the operators a round applies (EoH's e1, e2, m1, m2) and how
  parents are selected (rank, tournament, best, uniform). Every ``meta_every`` rounds the LLM
  is shown the plans tried and the score each gained, and writes the next plan; the plan is
  data, read by this method (generated code runs only through the engine, so the LLM's optimiser
  is not executed as code). The offline sampler cannot write plans: its answer does not parse,
  and the method then takes the next of its built-in plans, or the one that gained most once all
  were tried (``meta_answers`` counts the plans the LLM wrote). So offline, this is multi-task
  EoH with a plan schedule; the meta-level needs a real LLM.
"""
from __future__ import annotations

import logging
import re
from typing import Optional, Sequence

import numpy as np
from llm4ad.base import Function

from tasks.common.families import VALIDATION_FAMILIES

from ..llm.answers import without_thinking
from . import moh_prompts as prompts
from .base import MethodBase, choose

__all__ = ["MoH", "second_variant", "parse_plan", "BUILTIN_PLANS", "SELECTIONS"]

log = logging.getLogger("raise_plugin.methods")

OPERATORS = ("e1", "e2", "m1", "m2")
SELECTIONS = ("rank", "tournament", "best", "uniform")
# the plans the method falls back on without an LLM that writes plans: EoH's own first
BUILTIN_PLANS = ((("e1", "e2", "m1", "m2"), "rank"), (("m1", "m2", "m2"), "tournament"),
                 (("e2", "m1", "e1"), "uniform"), (("m2", "m1"), "best"))
_PLAN = re.compile(r"operators?\s*[:=]\s*([a-z0-9 ,]+?)[^a-z0-9]{0,12}selection\s*[:=]\s*([a-z]+)", re.I)
_PLAN_START = re.compile(r"operators?\s*[:=]", re.I)
_MARKUP = str.maketrans("", "", "*`[]_\"'")  # markdown's bold, code and lists of a plan written by a chat model


def second_variant(task, count: int, family: str = "gamma", seed: int = 0, **params) -> list:
    """``count`` instances of ``family`` (a validation family) at the task's nominal sizes, instance
    i from the generator seeded with ``(seed, i)``: MoH's second training distribution."""
    if family not in VALIDATION_FAMILIES:
        raise ValueError(f"second_family {family!r}: choose a validation family ({', '.join(VALIDATION_FAMILIES)}); "
                         "the test families are for the report only")
    if int(count) < 1:
        raise ValueError(f"the second variant needs at least one instance, got {count!r}")
    return [task.family_instance(family, np.random.default_rng([seed, i]), **params) for i in range(int(count))]


def parse_plan(text: str) -> tuple[tuple[str, ...], str] | None:
    """``(operators, selection)`` from an answer in ``PLAN_FORMAT``, or ``None`` when it holds none.

    The last plan of the answer counts (a model may repeat the plans tried before its own), its thinking
    (``<think>``) left out; markdown around it (``**operators:**``, backticks, brackets, a fence, one
    line each for the operators and the selection) is read through."""
    text = without_thinking(str(text or "")).translate(_MARKUP)
    for start in reversed(list(_PLAN_START.finditer(text))[-50:]):
        found = _PLAN.match(text, start.start(), start.end() + 200)
        if found is None:
            continue
        ops = tuple(o.lower() for o in re.split(r"[\s,]+", found.group(1)) if o and o.lower() != "and")
        selection = found.group(2).lower()
        if ops and len(ops) <= 8 and all(o in OPERATORS for o in ops) and selection in SELECTIONS:
            return ops, selection
    return None


class MoH(MethodBase):
    """MoH-style multi-task heuristic design with the host's constructor shape.

    Args (besides ``MethodBase``'s):
        second_family: the family of the second training variant (a validation family;
            default ``gamma``), or ``second_instances``: the second variant's instances.
        second_seed, second_params: its seed and size overrides (e.g. ``{"num_items": 1000}``).
        meta_every: rounds between two meta steps (the optimiser's revision; default 2).
    """

    method_name = "moh"

    def __init__(self, llm, evaluation, profiler=None, max_generations: Optional[int] = None,
                 max_sample_nums: Optional[int] = 100, pop_size: Optional[int] = None, num_samplers: int = 1,
                 num_evaluators: int = 1, *, seed: int = 0, second_family: str = "gamma",
                 second_instances: Sequence | None = None, second_seed: int = 0, second_params: dict | None = None,
                 meta_every: int = 2, **kwargs):
        if not all(hasattr(evaluation, a) for a in ("instances", "metrics", "score_of")):
            raise TypeError("MoH needs per-instance metrics: an evaluation with instances, metrics() and "
                            f"score_of() (tasks' TaskEvaluation), got {type(evaluation).__name__}")
        if int(meta_every) < 1:
            raise ValueError(f"meta_every must be >= 1, got {meta_every!r}")
        first = list(evaluation.instances)
        if second_instances is None:
            task = getattr(evaluation, "task", None)
            if task is None:
                raise TypeError("MoH builds its second variant from evaluation.task; pass second_instances=[...]")
            second = second_variant(task, len(first), second_family, second_seed, **(second_params or {}))
        else:
            second = list(second_instances)
            if not second:
                raise ValueError("second_instances is an empty list")
            second_family = "given"
        evaluation.instances = first + second
        super().__init__(llm, evaluation, profiler, max_generations, max_sample_nums, pop_size, num_samplers,
                         num_evaluators, seed=seed, **kwargs)
        self.variants = {"nominal": (0, len(first)), second_family: (len(first), len(first) + len(second))}
        self.meta_every = int(meta_every)
        self.plan: tuple[tuple[str, ...], str] = BUILTIN_PLANS[0]
        self._plan_source = "built-in"
        self.plan_history: list[dict] = []   # every plan run: operators, selection, samples, gain, source
        self.meta_calls = 0
        self.meta_answers = 0                 # plans the LLM wrote that parsed
        self._rounds_on_plan = 0
        self._plan_start: float | None = None
        self._plan_samples = 0

    # -- the optimiser the meta-level chose --------------------------------------------
    def _best_score(self) -> float | None:
        members = self._usable()
        return float(members[0].score) if members else None

    def _close_plan(self) -> None:
        """Record what the plan in use gained (best score now minus when it started)."""
        now = self._best_score()
        gain = 0.0 if now is None or self._plan_start is None else now - self._plan_start
        self.plan_history.append({"operators": list(self.plan[0]), "selection": self.plan[1],
                                  "samples": self._plan_samples, "gain": float(gain),
                                  "source": self._plan_source})

    def _meta_step(self) -> None:
        """MoH's meta level: the LLM writes the next plan from the history; else a built-in one."""
        self._close_plan()
        answer = self._ask(prompts.meta(self._task_description_str, list(self.variants), self.plan_history,
                                             OPERATORS, SELECTIONS), "meta")
        self.meta_calls += 1
        written = parse_plan(answer)
        if written is not None:
            self.meta_answers += 1
            self.plan, self._plan_source = written, "llm"
        else:
            self.plan, self._plan_source = self._fallback_plan(), "built-in"
        self._plan_start, self._plan_samples, self._rounds_on_plan = self._best_score(), 0, 0

    def _fallback_plan(self) -> tuple[tuple[str, ...], str]:
        tried = {(tuple(h["operators"]), h["selection"]) for h in self.plan_history}
        for plan in BUILTIN_PLANS:
            if plan not in tried:
                return plan
        best = max(self.plan_history, key=lambda h: h["gain"] / max(1, h["samples"]))
        return tuple(best["operators"]), best["selection"]

    # -- parents --------------------------------------------------------------------
    def _select(self, members: list[Function], exclude: Function | None = None) -> Function:
        pool = [f for f in members if f is not exclude] or members
        rule = self.plan[1]
        if rule == "best":
            return pool[0]
        if rule == "uniform":
            return choose(self.rng, pool)
        if rule == "tournament":
            a, b = choose(self.rng, pool), choose(self.rng, pool)
            return a if a.score >= b.score else b
        return choose(self.rng, pool, [1.0 / (r + len(pool)) for r in range(len(pool))])

    def per_variant(self, func: Function) -> dict[str, float]:
        """The member's mean metric on each training variant (and on adversarial instances under robust())."""
        row = self._metrics_of(func)
        if row is None:
            return {}
        out = {name: float(np.mean(row[a:b])) for name, (a, b) in self.variants.items() if b <= row.size}
        end = max(b for _, b in self.variants.values())
        if row.size > end:
            out["adversarial"] = float(np.mean(row[end:]))
        return out

    def _describe(self, f: Function) -> prompts.Parent:
        return self.code_of(f), f.algorithm or "", float(f.score), self.per_variant(f)

    # -- a round --------------------------------------------------------------------
    def _init_prompt(self) -> str:
        return prompts.init(self._task_description_str, list(self.variants), self._header)

    def _evolve_round(self) -> None:
        if self._plan_start is None:
            self._plan_start = self._best_score()
        for op in self.plan[0]:
            if not self._continue_loop():
                return
            members = self._parents_for(op)
            if members is None:
                continue
            task, variants, header = self._task_description_str, list(self.variants), self._header
            first = self._select(members)
            if op in ("e1", "e2"):
                parents = [self._describe(first), self._describe(self._select(members, exclude=first))]
                prompt = (prompts.e1 if op == "e1" else prompts.e2)(task, variants, parents, header)
            else:
                prompt = (prompts.m1 if op == "m1" else prompts.m2)(task, variants, self._describe(first), header)
            self._sample(prompt, op)
            self._plan_samples += 1
        self._rounds_on_plan += 1
        if self._rounds_on_plan >= self.meta_every and self._continue_loop():
            self._meta_step()

    def run(self):
        result = super().run()
        log.info("MoH: %d meta steps, %d plans written by the LLM; last plan %s / %s", self.meta_calls,
                 self.meta_answers, ",".join(self.plan[0]), self.plan[1])
        return result

    # -- checkpoints ------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        state.update(plan=[list(self.plan[0]), self.plan[1]], plan_history=list(self.plan_history),
                     meta_calls=self.meta_calls, meta_answers=self.meta_answers, rounds_on_plan=self._rounds_on_plan,
                     plan_start=self._plan_start, plan_samples=self._plan_samples,
                     variants={k: list(v) for k, v in self.variants.items()})
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        if state.get("plan"):
            self.plan = (tuple(state["plan"][0]), str(state["plan"][1]))
        self.plan_history = list(state.get("plan_history", []))
        self.meta_calls = int(state.get("meta_calls", 0))
        self.meta_answers = int(state.get("meta_answers", 0))
        self._rounds_on_plan = int(state.get("rounds_on_plan", 0))
        self._plan_start = state.get("plan_start")
        self._plan_samples = int(state.get("plan_samples", 0))
