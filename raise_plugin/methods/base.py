"""What ReEvo, PartEvo and EoH-S share: llm4ad's EoH driver with pluggable operators, survival and metrics.

Each method subclasses ``MethodBase`` (itself a subclass of llm4ad's ``EoH``), so the
constructor shape, ``_sample_evaluate_register``, profiler handling, ``_continue_loop``,
``_multi_threaded_sampling`` and ``run()`` are the host's and ``raise_plugin.robust.robust``
wraps every method the same way. A method writes only its operator loop
(``_init_prompt``, ``_evolve_round``), its survival rule, and its own state.
"""
from __future__ import annotations

import concurrent.futures
import copy
import logging
import math
import re
import threading
from typing import Any, Literal, Optional, Sequence

import numpy as np
from llm4ad.base import Evaluation, Function, LLM, TextFunctionProgramConverter
from llm4ad.method.eoh import EoH
from llm4ad.tools.profiler import ProfilerBase

from ..llm.answers import without_thinking
from ..robust import QuietProfiler, program_id_of
from .metrics import MetricsEvaluator
from .population import MethodPopulation, Survivors, finite
from .sampler import TracingSampler

__all__ = ["MethodBase", "choose", "clean_text", "MAX_CONSECUTIVE_FAILURES"]

log = logging.getLogger("raise_plugin.methods")

# An operator step that raises this many times in a row (no sample in between) ends the
# sampler thread instead of spinning: a broken prompt or back-end must not loop forever.
MAX_CONSECUTIVE_FAILURES = 25


# --------------------------------------------------------------------------- the driver
class MethodBase(EoH):
    """llm4ad's ``EoH`` with the operator loops left to subclasses.

    Args (the host's shape; see ``llm4ad.method.eoh.EoH``):
        llm, evaluation, profiler: as the host. Without a profiler the host never counts a
            sample, so a counting one that writes nothing is attached.
        max_generations: stop after this many generations (``None``, the default: only the budget).
        max_sample_nums: the budget: programs sampled and evaluated. Reflection and summary
            calls are LLM calls but not samples.
        pop_size: population size (``None``: the host's choice from the budget).
        num_samplers, num_evaluators: sampler threads and evaluation workers.
        seed: seeds every random choice of the method (``np.random.Generator``). Under
            ``robust()`` the wrapper's ``seed`` argument is used.
        **kwargs: passed to the host (``resume_mode``, ``debug_mode``, ...).
    """

    method_name = "method"

    def __init__(self, llm: LLM, evaluation: Evaluation, profiler: ProfilerBase | None = None,
                 max_generations: Optional[int] = None, max_sample_nums: Optional[int] = 100,
                 pop_size: Optional[int] = None, num_samplers: int = 1, num_evaluators: int = 1, *,
                 seed: int = 0, resume_mode: bool = False, debug_mode: bool = False,
                 multi_thread_or_process_eval: Literal["thread", "process"] = "thread", **kwargs):
        if max_sample_nums is None or int(max_sample_nums) < 1:
            raise ValueError(f"max_sample_nums must be a positive integer, got {max_sample_nums!r}")
        if profiler is None:
            profiler = QuietProfiler()
        kwargs.setdefault("fork_proc", "default")  # never switch the global start method to spawn
        super().__init__(llm=llm, evaluation=evaluation, profiler=profiler, max_generations=max_generations,
                         max_sample_nums=int(max_sample_nums), pop_size=pop_size, selection_num=2,
                         num_samplers=num_samplers, num_evaluators=num_evaluators, resume_mode=resume_mode,
                         debug_mode=debug_mode, multi_thread_or_process_eval=multi_thread_or_process_eval,
                         **kwargs)
        self._llm = llm
        self._evaluation_obj = evaluation
        self.seed = int(seed)
        self._rng: np.random.Generator | None = None
        self._state_lock = threading.RLock()
        self._sampler = TracingSampler(llm, self._template_program_str)
        self._population = MethodPopulation(self._pop_size, survivors=self._survivors())
        if all(hasattr(evaluation, a) for a in ("instances", "metrics", "score_of")):
            self._evaluator = MetricsEvaluator(evaluation)
            if not isinstance(self._evaluation_executor, concurrent.futures.ThreadPoolExecutor):
                # the evaluator keeps its cache in this process: the host's threads only wait on it
                self._evaluation_executor.shutdown(wait=False)
                self._evaluation_executor = concurrent.futures.ThreadPoolExecutor(max_workers=num_evaluators)
        self._header = self._empty_template()
        self._active_samplers = 0
        # statistics
        self.text_calls = 0
        self.operator_counts: dict[str, int] = {}
        self.operator_errors = 0
        self.initial_population: list[tuple[str, float]] | None = None

    # -- what subclasses write ----------------------------------------------------
    def _init_prompt(self) -> str:
        raise NotImplementedError

    def _evolve_round(self) -> None:
        """One round of the method's operators; check ``self._continue_loop()`` before each sample."""
        raise NotImplementedError

    def _survivors(self) -> Survivors | None:
        """The population's survival rule (``None``: the host's, best scores)."""
        return None

    def _after_sample(self, func: Function) -> None:
        """Called in the sampler thread after ``func`` was evaluated and registered."""

    # -- the host's loops ---------------------------------------------------------
    def _iteratively_init_population(self):
        failures = 0
        while self._population.generation == 0 and self._tot_sample_nums < self._initial_sample_nums_max:
            try:
                self._sample(self._init_prompt(), "init")
                failures = 0
            except Exception as exc:  # an LLM or evaluation failure: count, log, go on
                failures += 1
                if self._failed(exc, "init", failures):
                    break

    def run(self):
        try:
            return super().run()
        finally:
            if isinstance(self._evaluator, MetricsEvaluator):  # a robust run closes its own evaluator
                self._evaluator.close()  # stop the sandbox workers this run started

    def _iteratively_use_eoh_operator(self):
        with self._state_lock:
            self._active_samplers += 1
        self._note_initial_population()
        failures = 0
        try:
            while self._continue_loop():
                try:
                    self._evolve_round()
                    failures = 0
                except Exception as exc:
                    failures += 1
                    if self._failed(exc, "evolution", failures):
                        break
        finally:
            with self._state_lock:
                self._active_samplers -= 1
                last = self._active_samplers == 0
            if last:  # the host shuts the executor down in every thread; only the last one should
                self._evaluation_executor.shutdown(cancel_futures=True)

    def _failed(self, exc: Exception, phase: str, failures: int) -> bool:
        with self._state_lock:
            self.operator_errors += 1
        if self._debug_mode:
            raise exc
        log.warning("%s: %s step failed (%s: %s)", type(self).__name__, phase, type(exc).__name__, exc)
        if failures >= MAX_CONSECUTIVE_FAILURES:
            log.error("%s: %d failures in a row in %s; this sampler thread stops", type(self).__name__,
                      failures, phase)
            fail = getattr(self, "fail", None)  # the robust wrapper's: the run ends as failed, saying why
            if callable(fail):
                fail(f"{self.method_name}: {failures} operator steps in a row failed ({phase}); the last: "
                     f"{type(exc).__name__}: {exc}")
            return True
        return False

    # -- sampling -----------------------------------------------------------------
    def _sample(self, prompt: str, operator: str, **tags: Any) -> Function | None:
        """Sample, evaluate and register one program (one unit of the budget, as the host counts).

        Returns the registered function (its ``score`` set), or ``None`` when the answer held no
        usable program (the host counts no sample then)."""
        sampler: TracingSampler = self._sampler
        sampler.begin({"_operator": operator, **tags})
        try:
            self._sample_evaluate_register(prompt)
        finally:
            func = sampler.end()
        with self._state_lock:
            self.operator_counts[operator] = self.operator_counts.get(operator, 0) + 1
        if func is None or func.evaluate_time is None:
            return None
        self._after_sample(func)
        return func

    def _ask_text(self, prompt: str, operator: str, max_chars: int = 800) -> str:
        """An LLM call answered with text (a reflection, a summary); not a sample."""
        return clean_text(self._ask(prompt, operator), max_chars)

    def _ask(self, prompt: str, operator: str) -> str:
        """An LLM call answered with text, the answer as given; not a sample."""
        answer = self._llm.draw_sample(prompt)
        with self._state_lock:
            self.text_calls += 1
            self.operator_counts[operator] = self.operator_counts.get(operator, 0) + 1
        return str(answer or "")

    # -- the population -----------------------------------------------------------
    @property
    def rng(self) -> np.random.Generator:
        """The method's random generator, seeded from ``seed`` on first use."""
        with self._state_lock:
            if self._rng is None:
                self._rng = np.random.default_rng([self.seed, 0x5EED])
            return self._rng

    def _members(self) -> list[Function]:
        """A snapshot of the current population (waits out a robust refresh)."""
        pop = self._population
        settled = getattr(pop, "settled_members", None)  # the robust wrapper's population
        if settled is not None:
            return settled()
        with pop._lock:
            return list(pop.population)

    def _parents_for(self, op: str) -> list[Function] | None:
        """The usable members to draw operator ``op``'s parents from, or ``None`` after sampling a
        new starting program when there are too few (two for a crossover, one otherwise)."""
        members = self._usable()
        if len(members) < (2 if op in ("e1", "e2") else 1):
            self._sample(self._init_prompt(), "init")
            return None
        return members

    def _usable(self) -> list[Function]:
        """Members with a finite score, best first."""
        return sorted((f for f in self._members() if finite(f)), key=lambda f: f.score, reverse=True)

    def _note_initial_population(self) -> None:
        with self._state_lock:
            if self.initial_population is None:
                self.initial_population = [(self._program_text(f), float(f.score)) for f in self._members()]

    @property
    def initial_best(self) -> float | None:
        """The best score of the population the evolution started from."""
        scores = [s for _, s in self.initial_population or [] if math.isfinite(s)]
        return max(scores) if scores else None

    def _program_text(self, func: Function) -> str:
        """The full program (imports and the function), the key of the score caches."""
        of = getattr(self, "program_text_of", None)  # the robust wrapper's, when wrapped
        if of is not None:
            return of(func)
        key = getattr(func, "_method_key", None)
        if key is None:
            key = str(TextFunctionProgramConverter.function_to_program(func, self._template_program))
            func._method_key = key
        return key

    def _metrics_of(self, func: Function, *, compute: bool = True) -> np.ndarray | None:
        """Per-instance metrics (lower is better) of ``func`` on the current instance set, or ``None``.

        Wrapped: from the wrapper's cache (``program_metrics``). Unwrapped: from the
        ``MetricsEvaluator`` (evaluated now if ``compute`` and not yet known)."""
        text = self._program_text(func)
        if hasattr(self, "program_metrics"):
            metrics = self.program_metrics(program_id_of(text))
            values = [metrics.get(e.instance_id) for e in self.instance_entries()]
            if not values or any(v is None for v in values):
                return None
            return np.asarray(values, dtype=float)
        if isinstance(self._evaluator, MetricsEvaluator):
            return self._evaluator.metrics(text, compute=compute)
        return None

    @property
    def training_instances(self) -> list:
        """The instances programs are currently scored on."""
        return list(getattr(self._evaluation_obj, "instances", []) or [])

    # -- prompt pieces ------------------------------------------------------------
    def _empty_template(self) -> str:
        func = copy.deepcopy(self._function_to_evolve)
        func.body = ""
        return str(func).rstrip() + "\n"

    @staticmethod
    def code_of(func: Function) -> str:
        """The function's code for a prompt (without the template docstring)."""
        shown = copy.copy(func)
        shown.docstring = ""
        return str(shown).strip("\n")

    @property
    def function_name(self) -> str:
        return self._function_to_evolve_name

    # -- checkpoints --------------------------------------------------------------
    def state_dict(self) -> dict:
        """The method's own state (JSON-serialisable): RNG and counters; subclasses add theirs."""
        with self._state_lock:
            return {"method": self.method_name, "seed": self.seed, "rng": self.rng.bit_generator.state,
                    "text_calls": self.text_calls, "operator_counts": dict(self.operator_counts),
                    "operator_errors": self.operator_errors}

    def load_state_dict(self, state: dict) -> None:
        with self._state_lock:
            if state.get("rng") is not None:
                self.rng.bit_generator.state = state["rng"]
            self.text_calls = int(state.get("text_calls", 0))
            self.operator_counts = dict(state.get("operator_counts", {}))
            self.operator_errors = int(state.get("operator_errors", 0))


_FENCE = re.compile(r"```.*?(```|$)", re.S)


def clean_text(answer: str, max_chars: int = 800) -> str:
    """A text answer fit to quote in the next prompt: no thinking (``<think>``), no code fences, one
    paragraph, bounded."""
    text = _FENCE.sub(" ", without_thinking(str(answer or "")))
    text = " ".join(text.split())
    return text[:max_chars].strip() or "(no answer)"


def choose(rng: np.random.Generator, items: Sequence, p: Sequence[float] | None = None):
    """One element of ``items`` drawn with ``rng`` (``p`` normalised; uniform when ``None``)."""
    if p is None:
        return items[int(rng.integers(len(items)))]
    w = np.asarray(p, dtype=float)
    return items[int(rng.choice(len(items), p=w / w.sum()))]
