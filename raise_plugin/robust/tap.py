"""Hosts without generations (FunSearch, HillClimb, RandSample): every sample reaches the wrapper
through the host's profiler, and a generation is every ``generation_size`` samples.

These hosts register every evaluated sample with ``self._profiler.register_function`` (the
wrapper always attaches a profiler), so the adapter puts a tap in front of the profiler's
class. Their sampler loops run ``while self._tot_sample_nums < self._max_sample_nums`` and
swallow ``Exception``: a requested stop makes the count read as infinite, so every loop ends
after the sample it is drawing. The host evaluates its template and registers it before its
sampler loops without counting it; the tap counts it, as a resumed run counts every recorded
sample, so with one sampler a run ends at its budget (FunSearch, drawing 4 samples a prompt,
up to 3 past it).
"""
from __future__ import annotations

import math

from .gate import EventGate
from .shape import HostShape, with_mixin

__all__ = ["TappedShape"]


class _ProfilerTap:
    """Mixed in front of the host profiler's class: the sample goes to the wrapper first."""

    def register_function(self, function, *args, **kwargs):
        self._raise_method._tapped_sample(function)
        return super().register_function(function, *args, **kwargs)


class TappedShape(HostShape):
    """Shared by the adapters of hosts whose samples arrive through the profiler."""

    def _install_shape(self) -> None:
        self._tap_gate = EventGate()
        self._tapped_samples = 0
        self._tapped_generation = 0
        self._profiler = with_mixin(self._profiler, _ProfilerTap, "Tapped")
        self._profiler._raise_method = self

    @property
    def _gate(self) -> EventGate:
        return self._tap_gate

    @property
    def generation(self) -> int:
        return self._tapped_generation

    @property
    def samples(self) -> int:
        return self._tapped_samples

    # the host's loop condition reads this: infinite once a stop was requested
    @property
    def _tot_sample_nums(self):
        count = self.__dict__.get("_raise_tot_sample_nums", 0)
        return math.inf if getattr(self, "stop_reason", None) is not None else count

    @_tot_sample_nums.setter
    def _tot_sample_nums(self, value):
        self.__dict__["_raise_tot_sample_nums"] = value

    def _tapped_sample(self, function) -> None:
        rec = self.record_of(function)
        self.with_current_score(rec, lambda score, version, ids: self._register_locked(
            function, rec, score, version, ids))
        self._gate.dispatch()

    def _register_locked(self, function, rec, score, version, ids) -> None:
        self._tapped_samples += 1
        if function is getattr(self, "_function_to_evolve", None):  # the template, which the host does not count
            self._tot_sample_nums = self.__dict__.get("_raise_tot_sample_nums", 0) + 1  # a sample of the budget
        joined = score is not None and math.isfinite(score)
        function.score = score if joined else float("-inf")
        duplicate = joined and self._admit(function)
        self.sample_registered(self._tapped_samples, function, rec, score, version, ids, joined, duplicate)
        if self._tapped_samples % self._generation_size == 0:
            self._tapped_generation += 1
            self.generation_ended()

    def _admit(self, function) -> bool:
        """Keep a valid sample (gate lock held); whether it was a duplicate of a kept program."""
        raise NotImplementedError

    def _restore_members(self, members: list, pending: list, generation: int, samples: int) -> None:
        with self._gate.cond:
            self._tapped_generation = generation
            self._tapped_samples = samples
            for function in members + pending:
                self._admit(function)
