"""The adversary's settings, each validated on creation: ``SearchConfig`` (one inner search) and
``AdversaryConfig`` (RAISE's inner loop in a run), with the error naming a bad field."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from tasks.common.aggregation import Aggregation

from .objective import Objective, parse_objective
from .projection import PROJECTIONS

__all__ = ["SearchConfig", "AdversaryConfig", "AdversaryConfigError", "ENCODINGS", "CONSTRAINTS", "NOISE", "OBJECTIVES",
           "LENGTHS", "TAU_UNITS", "PER_REFRESH"]

ENCODINGS = ("basis", "flat")
CONSTRAINTS = ("ball", "none")
NOISE = ("common", "independent")
OBJECTIVES = ("metric", "regret")
LENGTHS = ("gene", "nominal")
TAU_UNITS = ("generations", "samples")
PER_REFRESH = ("one", "draws")  # instances a refresh adds: the representative draw, or every draw


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
    population: int = 8
    generations: int = 4
    encoding: str = "basis"
    projection: str = "paper"
    constraint: str = "ball"
    noise: str = "common"
    enabled: bool = True
    crossover_rate: float = 0.5
    mutation_rate: float = 0.35
    mutation_sigma: float = 0.12
    stop_on_failure: bool = True
    measure_nominal: bool = False
    draws: int = 1
    objective: str = "metric"
    length: str = "gene"

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


class AdversaryConfigError(ValueError):
    """A bad adversary setting: ``field`` names it, ``reason`` says why (the message is both)."""

    def __init__(self, field: str, reason: str, sep: str = " "):
        super().__init__(f"{field}{sep}{reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class AdversaryConfig:
    """RAISE's settings, validated once: ``RunConfig``, ``CompareConfig`` (through the run
    configs it makes) and ``AdversarialInstanceCallback`` all check them here, and a bad one
    is a ``ValueError`` whose message starts with the field's name.

    ``switches``: the inner search's ``projection``, ``encoding``, ``constraint``, ``length``
    (checked here), ``noise`` and ``executor`` (passed on). ``per_refresh``: ``one`` (the
    paper's: a refresh adds the winning distribution's representative draw) or ``draws``
    (it adds all R draws of it).
    """

    epsilon: float = 0.002
    tau: int = 5
    tau_unit: str = "generations"
    inner_population: int = 8
    inner_generations: int = 4
    aggregation: Any = "mean"
    max_adversarial: int = 10
    objective: Any = "metric"
    draws: int | None = None
    switches: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    per_refresh: str = "one"

    def __post_init__(self):
        def bad(name, reason, sep=" "):
            raise AdversaryConfigError(name, reason, sep)

        eps = self.epsilon
        if isinstance(eps, bool) or not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps > 0):
            bad("epsilon", f"must be a finite number > 0, got {eps!r}")
        object.__setattr__(self, "epsilon", float(eps))
        if self.draws is not None and (not isinstance(self.draws, int) or isinstance(self.draws, bool)
                                       or self.draws < 1):
            bad("draws", f"must be an integer >= 1, got {self.draws!r}")
        if self.tau_unit not in TAU_UNITS:
            bad("tau_unit", f"must be one of {', '.join(TAU_UNITS)}, got {self.tau_unit!r}")
        if self.per_refresh not in PER_REFRESH:
            bad("per_refresh", f"must be one of {', '.join(PER_REFRESH)}, got {self.per_refresh!r}")
        for name, low in (("tau", 1), ("inner_population", 2), ("inner_generations", 1), ("max_adversarial", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                bad(name, f"must be an integer >= {low}, got {value!r}")
        try:
            Aggregation.parse(self.aggregation)
        except ValueError as exc:
            bad("aggregation", str(exc), ": ")
        try:
            parse_objective(self.objective)
        except ValueError as exc:
            bad("objective", str(exc), ": ")
        # the search's own choices (its SearchConfig checks the same when it runs)
        for name, choices in (("projection", PROJECTIONS), ("encoding", ENCODINGS), ("constraint", CONSTRAINTS),
                              ("length", LENGTHS)):
            value = self.switches.get(name)
            if value is not None and value not in choices:
                bad(name, f"must be one of {', '.join(choices)}, got {value!r}")

    @property
    def aggregation_rule(self):
        return Aggregation.parse(self.aggregation)

    @property
    def objective_rule(self) -> Objective:
        return parse_objective(self.objective)
