"""RAISE's settings of the adversary, validated once: ``AdversaryConfig`` and the error naming a bad field."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from tasks.common.aggregation import Aggregation

from .objective import Objective, parse_objective
from .projection import PROJECTIONS
from .search import CONSTRAINTS, ENCODINGS, LENGTHS

__all__ = ["AdversaryConfig", "AdversaryConfigError", "TAU_UNITS", "PER_REFRESH"]

TAU_UNITS = ("generations", "samples")
PER_REFRESH = ("one", "draws")  # instances a refresh adds: the representative draw, or every draw


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
