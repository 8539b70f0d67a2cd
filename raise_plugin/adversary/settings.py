"""The adversary's settings, each validated on creation: ``SearchConfig`` (one inner search, in its
own words: ``population``, ``generations``, ``draws``, ``objective``) and ``AdversaryConfig`` (RAISE's
inner loop in a run, in the tree's: ``inner_population``, ...). Defaults, choices and checks come
from the one tree of settings (``raise_plugin.settings``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from raise_plugin.settings import (CONSTRAINTS, ENCODINGS, LENGTHS, PER_REFRESH, PROJECTIONS, SETTINGS, TAU_UNITS,
                                   SettingError, default, fallback)
from tasks.common.aggregation import Aggregation
from tasks.common.evaluation import named_baseline

from .objective import Objective, parse_objective

__all__ = ["SearchConfig", "AdversaryConfig", "AdversaryConfigError", "ENCODINGS", "CONSTRAINTS", "NOISE", "OBJECTIVES",
           "LENGTHS", "TAU_UNITS", "PER_REFRESH"]

NOISE = ("common", "independent")
OBJECTIVES = ("metric", "regret")


@dataclass(frozen=True)
class SearchConfig:
    """Settings of one inner search (paper defaults). Validates itself on creation.

    ``epsilon`` (eps): radius of the ball around the nominal histograms.
    ``population`` (P_in) and ``generations`` (G_in): the GA's size and length.
    ``encoding``: ``"basis"`` (18 genes, the nine-basis mixture) or ``"flat"``
    (K + 1 genes perturbing the cells directly; ablation "w/o base distributions").
    ``projection``: ``"paper"``, ``"sphere"`` or ``"none"`` (ablation "w/o eps-mapping").
    ``constraint``: ``"ball"`` or ``"none"`` (ablation "w/o distribution constraint":
    no anchoring at p_bar and no projection, whatever ``projection`` says).
    ``length``: ``"gene"`` (the paper's: the last gene scales the instance length by 0.9-1.1
    where the task allows it) or ``"nominal"`` (every instance has the nominal length).
    ``noise``: ``"common"`` samples draw r of every candidate from one seed
    ``instance_seed(seed, r)`` (common random numbers, so candidates differ only by
    their distribution), ``"independent"`` draws a fresh seed per candidate and draw.
    ``draws`` (R): instances sampled per candidate distribution; its fitness is the mean.
    ``objective``: ``"metric"`` (the paper's: fitness = the heuristic's metric) or
    ``"regret"`` (fitness = metric minus the best reference's metric on the same instance).
    ``enabled=False`` or ``generations=0`` switches the inner search off.
    ``stop_on_failure``: stop after the generation in which the heuristic failed
    (a failure is already the worst possible outcome).
    ``measure_nominal``: also evaluate the heuristic on the nominal set (``nominal_metric``).
    """

    epsilon: float
    population: int = default("inner_population")
    generations: int = default("inner_generations")
    encoding: str = fallback("encoding")
    projection: str = fallback("projection")
    constraint: str = fallback("constraint")
    noise: str = "common"
    enabled: bool = True
    crossover_rate: float = 0.5
    mutation_rate: float = 0.35
    mutation_sigma: float = 0.12
    stop_on_failure: bool = True
    measure_nominal: bool = False
    draws: int = 1
    objective: str = "metric"
    length: str = fallback("length")

    def __post_init__(self):
        try:
            valid = bool(np.isfinite(float(self.epsilon)) and float(self.epsilon) > 0)
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}")
        if int(self.population) != self.population or self.population < 2:
            raise ValueError(f"population (P_in) must be an integer >= 2, got {self.population!r}")
        if int(self.generations) != self.generations or self.generations < 0:
            raise ValueError(f"generations (G_in) must be an integer >= 0, got {self.generations!r}")
        if isinstance(self.draws, bool) or int(self.draws) != self.draws or self.draws < 1:
            raise ValueError(f"draws (R) must be an integer >= 1, got {self.draws!r}")
        for name, allowed in (("encoding", ENCODINGS), ("projection", PROJECTIONS),
                              ("constraint", CONSTRAINTS), ("noise", NOISE), ("objective", OBJECTIVES),
                              ("length", LENGTHS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")

    @property
    def active(self) -> bool:
        return bool(self.enabled) and self.generations > 0


class AdversaryConfigError(SettingError):
    """A bad adversary setting: ``name`` names it (the tree's name), ``reason`` says why."""


@dataclass(frozen=True)
class AdversaryConfig:
    """RAISE's settings, validated once against the tree: ``RunConfig``, ``CompareConfig`` (through
    the run configs it makes) and ``AdversarialInstanceCallback`` all check them here, and a bad
    one is an ``AdversaryConfigError`` (a ``ValueError``) whose message starts with the setting's name.

    ``switches``: the inner search's ``projection``, ``encoding``, ``constraint``, ``length``
    (checked here), ``noise`` and ``executor`` (passed on). ``instances_per_refresh``: ``one``
    (the paper's: a refresh adds the winning distribution's representative draw) or ``draws``
    (it adds all R draws of it).
    """

    epsilon: float = fallback("epsilon")
    tau: int = default("tau")
    tau_unit: str = default("tau_unit")
    inner_population: int = default("inner_population")
    inner_generations: int = default("inner_generations")
    aggregation: Any = fallback("aggregation")
    max_adversarial: int = default("max_adversarial")
    adversary_objective: Any = fallback("adversary_objective")
    inner_draws: int | None = default("inner_draws")
    switches: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    instances_per_refresh: str = default("instances_per_refresh")

    def __post_init__(self):
        def check(name, value):
            try:
                SETTINGS[name].check(value)
            except SettingError as exc:
                raise AdversaryConfigError(exc.name, exc.reason) from None

        if self.epsilon is None:
            raise AdversaryConfigError("epsilon", "must be a finite number > 0, got None")
        for name in ("epsilon", "inner_draws", "tau_unit", "instances_per_refresh", "tau", "inner_population",
                     "inner_generations", "max_adversarial"):
            check(name, getattr(self, name))
        object.__setattr__(self, "epsilon", float(self.epsilon))
        for name, parse in (("aggregation", Aggregation.parse), ("adversary_objective", parse_objective)):
            try:
                parse(getattr(self, name))
            except ValueError as exc:
                raise AdversaryConfigError(name, str(exc)) from None
        known = {f for f in SearchConfig.__dataclass_fields__} - {"epsilon", "population", "generations", "draws",
                                                                    "objective"} | {"executor"}
        for name in self.switches:
            if name not in known:
                raise AdversaryConfigError(name, f"not a setting of the inner search (its switches: "
                                                 f"{', '.join(sorted(known))})")
        for name in ("projection", "encoding", "constraint", "length"):  # the search's own choices
            check(name, self.switches.get(name))

    def search_options(self, draws: int) -> dict:
        """The inner search's keywords (``search``'s ``options``, named as ``SearchConfig`` names them:
        ``population``, ``generations``, ...) for ``draws`` instances per candidate distribution."""
        return {"population": self.inner_population, "generations": self.inner_generations, "draws": draws,
                "objective": self.objective_rule.kind, **self.switches}

    @property
    def aggregation_rule(self):
        return Aggregation.parse(self.aggregation)

    def check_task(self, task) -> None:
        """A baseline named by the objective or the aggregation must be ``task``'s
        (``AdversaryConfigError`` naming the field and the task's baselines)."""
        for name, baseline in (("adversary_objective", self.objective_rule.name),
                               ("aggregation", self.aggregation_rule.reference)):
            if baseline:
                try:
                    named_baseline(task, baseline)
                except ValueError as exc:
                    raise AdversaryConfigError(name, str(exc)) from None

    @property
    def objective_rule(self) -> Objective:
        return parse_objective(self.adversary_objective)
