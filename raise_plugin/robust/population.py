"""The population shape (llm4ad's ``EoH`` and its family: ReEvo, PartEvo, EoH-S).

The host keeps ``self._population``, an llm4ad ``Population`` (or subclass) whose
``register_function`` receives every evaluated sample, whose ``survival`` ends a generation
and whose ``selection`` picks parents. The adapter puts ``RobustPopulationMixin`` in front
of that class: survival queues ``on_generation_end`` (fired after the population lock is
released), duplicates are found by program text (not by score), ``None``/NaN scores count as
``-inf``, selection never spins on an all-``-inf`` population and draws from its own seeded
``numpy.random.Generator``, and a sample scored on an older instance set is evaluated on the
instances it missed before it joins.
"""
from __future__ import annotations

import math
import threading

import numpy as np
from llm4ad.base import Function

from llm4ad.method.eoh import EoH
from llm4ad.method.eoh.population import Population

from .gate import EventGate
from .scores import program_id_of
from .shape import HostShape, Stopped, with_mixin
from .tags import retag, tags

__all__ = ["RobustPopulationMixin", "PopulationShape"]


def _rank(score) -> float:
    """A score as survival ranks it (``None`` and NaN as ``-inf``)."""
    return -math.inf if score is None or math.isnan(score) else float(score)


class RobustPopulationMixin:
    """Mixed in front of a host population class; see the module docstring for what it changes."""

    def _robust_init(self, method, rng: np.random.Generator) -> None:
        self._gate = EventGate()
        self._cond = self._gate.cond
        self._method = method
        self._rng = rng
        self._local = threading.local()
        self.samples = 0

    def settled_members(self) -> list[Function]:
        """The members once no robust refresh is under way (a refresh re-scores them all)."""
        with self._cond:
            self._gate.wait()
            return list(self.population)

    # -- host interface -------------------------------------------------------
    def register_function(self, func: Function):
        method = self._method
        rec = method.record_of(func)
        self._local.depth = getattr(self._local, "depth", 0) + 1
        try:
            method.with_current_score(rec, lambda score, version, ids: self._register_locked(
                func, rec, score, version, ids))
        finally:
            self._local.depth -= 1
        self._gate.dispatch()

    def _register_locked(self, func, rec, score, version, ids) -> None:
        self.samples += 1
        func.score = score
        joined = not (self._generation == 0 and score is None)  # the host keeps only valid ones at first
        duplicate = False
        if joined:
            if score is None or math.isnan(score):
                func.score = float("-inf")
            if self.has_duplicate_function(func):
                func.score = float("-inf")
                duplicate = True
            retag(func, duplicate=duplicate)
            self._next_gen_pop.append(func)
        self._method.sample_registered(self.samples, func, rec, score, version, ids, joined, duplicate)
        if len(self._next_gen_pop) >= self._pop_size:
            self.survival()

    def has_duplicate_function(self, func) -> bool:
        # By program text: the host also calls two programs with equal scores duplicates.
        key = self._method.program_text_of(func)
        return any(self._method.program_text_of(f) == key for f in list(self._population) + self._next_gen_pop)

    def survival(self):
        with self._cond:
            if self._generation > 0 and not self._next_gen_pop:
                return  # nothing new: not a generation (the host calls survival once more after its init)
            if self._method.stop_reason is not None and len(self._next_gen_pop) < self._pop_size:
                # the run stopped mid-generation (a signal, a cap) and the host closes it short: its
                # samples are recorded, the generation is not, and resume completes it as the
                # uninterrupted run would have
                return
            for f in self._population + self._next_gen_pop:
                if f.score is None or math.isnan(f.score):
                    f.score = float("-inf")
            super().survival()
            self._method.generation_ended()
        if getattr(self._local, "depth", 0) == 0:
            self._gate.dispatch()

    def selection(self) -> Function:
        with self._cond:
            self._gate.wait()
            funcs = [f for f in self._population if f.score is not None and math.isfinite(f.score)]
            if not funcs:  # every member failed: pick uniformly rather than spin without sampling
                funcs = list(self._population)
                if not funcs:
                    raise RuntimeError("selection from an empty population")
                return funcs[int(self._rng.integers(len(funcs)))]
            ranked = sorted(funcs, key=lambda f: f.score, reverse=True)
            p = np.array([1.0 / (r + len(ranked)) for r in range(len(ranked))])
            return ranked[int(self._rng.choice(len(ranked), p=p / p.sum()))]

    def members(self) -> list[Function]:
        with self._cond:
            return list(self._population) + list(self._next_gen_pop)


class PopulationShape(HostShape):
    """Adapter for hosts with ``self._population`` (EoH, ReEvo, PartEvo, EoH-S)."""

    describe = "population (every member and pending sample re-scored; survival ends a generation)"

    @classmethod
    def fits(cls, method_cls: type) -> bool:
        return hasattr(method_cls, "_iteratively_use_eoh_operator") or hasattr(method_cls, "_population")

    def _install_shape(self) -> None:
        population = with_mixin(self._population, RobustPopulationMixin, "Robust")
        population._robust_init(self, np.random.default_rng(self.seed))
        self._population = population
        # the host's sampler loops, by name, and the prompts each has asked ("slots"): with one
        # sampler, a loop's n-th slot asks the same prompt in an uninterrupted and a resumed run
        self._loop = threading.local()
        self._slots = {"init": 0, "evolution": 0}
        self._skip: dict[str, int] = {}
        self._skip_rng = None
        self._bare: set[str] = set()

    @property
    def _gate(self) -> EventGate:
        return self._population._gate

    @property
    def generation(self) -> int:
        return self._population.generation

    @property
    def samples(self) -> int:
        return self._population.samples

    def _search_members(self) -> tuple[list, list]:
        pop = self._population
        return list(pop._population), list(pop._next_gen_pop)

    # -- early rejection ------------------------------------------------------------------------
    def _admission_supported(self) -> str | None:
        """Only the host's own survival (the ``pop_size`` best of members and pending, ties to the
        earlier) and the host's own EoH loops (the score of a sample goes nowhere else)."""
        pop_cls = type(self._population)
        for klass in pop_cls.__mro__[pop_cls.__mro__.index(RobustPopulationMixin) + 1:]:
            if "survival" in vars(klass):
                if klass is not Population:
                    return f"{klass.__name__}.survival keeps other than the pop_size best: every sample meets " \
                           f"the whole set"
                break
        if not self._host_loops():
            return "the method's own loops may read a sample's score: every sample meets the whole set"
        return None

    def _admission_bound(self) -> float:
        """The ``pop_size``-th best score among the members and the pending samples. Survival keeps
        the ``pop_size`` best of members and pending, in that order with ties to the earlier, and a
        new sample joins the pending ones last: at or below this score it never survives. Adding
        a sample at or below it leaves it where it is, so a rejected sample moves no later bound."""
        pop = self._population
        scores = [_rank(f.score) for f in list(pop._population) + list(pop._next_gen_pop)]
        if len(scores) < pop._pop_size:
            return -math.inf
        return sorted(scores, reverse=True)[pop._pop_size - 1]

    def _rng_state(self):
        return self._population._rng.bit_generator.state

    def _set_rng_state(self, state) -> None:
        self._population._rng.bit_generator.state = state

    def _resume_mode_after_restore(self) -> bool:
        return self.generation >= 1  # the host then skips its initial population

    def _restore_generation_end(self) -> None:
        """A kill after a generation's last sample, before its record: end that generation as the
        interrupted run did (survival on the scores it had then), without firing its event here
        (``restore`` lets the run fire it first thing)."""
        pop = self._population
        with pop._cond:
            if len(pop._next_gen_pop) < pop._pop_size:
                return
            for f in pop._population + pop._next_gen_pop:
                if f.score is None or math.isnan(f.score):
                    f.score = float("-inf")
            super(RobustPopulationMixin, pop).survival()

    def _restore_members(self, members: list, pending: list, generation: int, samples: int) -> None:
        pop = self._population
        with pop._cond:
            pop._population = members
            pop._next_gen_pop = pending
            # a start that ended with no valid program (an endpoint that failed, say) is made again
            pop._generation = generation if members else 0
            pop.samples = samples

    # -- exact resume -------------------------------------------------------------------------
    @classmethod
    def _host_loops(cls) -> bool:
        """Whether the host's own EoH loops run: they ask the LLM only for samples, so skipping
        a slot asks nothing (methods with loops of their own resume from their last generation)."""
        for klass in cls.__mro__[cls.__mro__.index(PopulationShape) + 1:]:
            if "_iteratively_use_eoh_operator" in vars(klass):
                return klass is EoH
        return False

    @classmethod
    def lanes_refused(cls, method_cls: type) -> str | None:
        return None

    def _one_sampler(self) -> bool:
        """One sampler thread: a sample's record can say where its loop stood (several samplers:
        the order of prompts follows thread timing; several lanes: each lane's loop has its own)."""
        return getattr(self, "_num_samplers", 1) == 1 and self._in_flight is None

    def _shape_cursor(self) -> dict:
        loop = getattr(self._loop, "name", None)
        if loop is None or not self._one_sampler() or not self._host_loops():
            return {}
        # the host's e1/e2 prompts clear the docstring of the parents they show: part of the state
        bare = sorted({self._id_of(f) for f in self._population.members() if getattr(f, "docstring", None) == ""})
        return {"loop": loop, "slot": self._slots[loop], "rng": self._rng_state(), "bare": bare}

    def _id_of(self, func) -> str:
        return program_id_of(self.program_text_of(func))

    def _resume_at(self, cursor: dict) -> None:
        """Skip the slots the interrupted run had asked in the loop it was in (their selections
        are made and dropped, no LLM is asked), then take the selection RNG it had then."""
        loop, slot = cursor.get("loop"), int(cursor.get("slot", 0))
        if loop not in self._slots or cursor.get("rng") is None or not self._one_sampler():
            return
        if loop == "init" and self.generation >= 1:
            loop, slot = "evolution", 0  # the sample ended the initial population
        self._slots[loop] = slot
        self._skip_rng = cursor["rng"]
        self._bare = set(cursor.get("bare") or ())
        if slot == 0:
            self._end_skip()
        else:
            self._skip = {loop: slot}

    def _end_skip(self) -> None:
        """The skipped slots are behind: the selection RNG and the members' docstrings as they were."""
        if self._skip_rng is not None:
            self._set_rng_state(self._skip_rng)
            for func in self._population.members():
                if self._id_of(func) in self._bare:
                    func.docstring = ""
                elif func.docstring == "" and tags(func).docstring:
                    func.docstring = tags(func).docstring  # cleared by a skipped slot's prompt
        self._skip, self._skip_rng = {}, None

    # the host's loops swallow ``Exception``: a requested stop passes them as ``Stopped``
    def _continue_loop(self) -> bool:
        return self.stop_reason is None and self._room_in_flight() and super()._continue_loop()

    def _room_in_flight(self, cap: int | None = None) -> bool:
        """Whether a lane may draw another sample: the samples registered and those in flight are
        fewer than the budget (or ``cap``). Always, with one program in flight."""
        if self._in_flight is None:
            return True
        cap = self._max_sample_nums if cap is None else cap
        return cap is None or self._tot_sample_nums + self._in_flight.in_flight < cap

    def _multi_threaded_sampling(self, fn, *args, **kwargs):
        if self._in_flight is None:
            return super()._multi_threaded_sampling(fn, *args, **kwargs)
        self._in_flight.lanes.run(fn, *args, **kwargs)

    def _sample_evaluate_register(self, *args, **kwargs):
        if self.stop_reason is not None:
            raise Stopped()
        loop = getattr(self._loop, "name", None)
        # a lane draws nothing past the budget, nor, starting, past the initial population's samples,
        # counting those in flight (one sampler stops there once the last is registered)
        if not self._room_in_flight() or (loop == "init" and not self._room_in_flight(self._initial_sample_nums_max)):
            raise Stopped()
        if self._skip.get(loop):
            self._skip[loop] -= 1
            if not self._skip[loop]:
                self._end_skip()
            return None
        if loop is not None:
            self._slots[loop] += 1
        return super()._sample_evaluate_register(*args, **kwargs)

    def _in_loop(self, name: str, loop) -> None:
        self._loop.name = name
        try:
            loop()
        except Stopped:
            pass
        finally:
            self._loop.name = None
            if self._skip.get(name):  # the loop ended inside the skipped slots
                self._end_skip()

    def _iteratively_init_population(self):
        self._in_loop("init", super()._iteratively_init_population)

    def _iteratively_use_eoh_operator(self):
        if not self._population._population:
            # nothing to select from: a resumed run whose start found no valid program (the host
            # ends such a run after its initial population; selection would fail without end)
            self.request_stop("the population is empty: no valid program was sampled to start from")
            return
        self._in_loop("evolution", super()._iteratively_use_eoh_operator)
