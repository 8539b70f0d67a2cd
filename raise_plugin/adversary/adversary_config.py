"""The adversary's settings, each checked on creation: ``SearchConfig`` (one inner search, its
fields named as the tree names them: ``inner_population``, ``inner_generations``, ``inner_draws``)
and ``AdversaryConfig`` (RAISE's inner loop in a run). Defaults, choices and checks come from the
one tree of settings (``raise_plugin.settings``)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from raise_plugin.config import AdversarySettings, InnerSearchSettings
from raise_plugin.errors import UserError
from raise_plugin.settings import (CONSTRAINTS, ENCODINGS, LENGTHS, PER_REFRESH, PROJECTIONS, SETTINGS, TAU_UNITS,
                                   Setting, SettingError, default, fallback)
from tasks.common.aggregation import Aggregation
from tasks.common.evaluation import named_baseline

from .objective import Objective, parse_objective
from .projection import check_epsilon

__all__ = ["SearchConfig", "PAPER_DRAWS", "AdversaryConfig", "AdversaryConfigError", "checked_setting", "ENCODINGS",
           "CONSTRAINTS", "NOISE", "OBJECTIVES", "LENGTHS", "TAU_UNITS", "PER_REFRESH"]

# R of one bare inner search: the paper's one draw per candidate distribution (a run's ``inner_draws``
# left unset is its task's instead, ``default_draws``)
PAPER_DRAWS = 1
NOISE = ("common", "independent")
OBJECTIVES = ("metric", "regret")
SEARCH_SWITCHES = ("projection", "encoding", "constraint", "length")  # settings of a run's inner search
EXTRA_SWITCHES = ("noise", "executor")  # the search's switches that are no settings of a run
INNER_SEARCH = tuple(f.metadata["setting"] for f in fields(InnerSearchSettings))
# keywords that now bear their setting's name: a call that still gives one is told the name (``search``'s own
# ``objective`` is no setting, so only the callback's is renamed)
RENAMED = {"population": "inner_population", "generations": "inner_generations", "draws": "inner_draws"}
RENAMED_SETTINGS = {**RENAMED, "objective": "adversary_objective", "per_refresh": "instances_per_refresh"}


@dataclass(frozen=True)
class SearchConfig:
    """Settings of one inner search (paper defaults). Checks itself on creation.

    ``epsilon`` (eps): radius of the ball around the nominal histograms.
    ``inner_population`` (P_in) and ``inner_generations`` (G_in): the GA's size and length.
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
    ``inner_draws`` (R): instances sampled per candidate distribution; its fitness is the mean.
    ``objective``: ``"metric"`` (the paper's: fitness = the heuristic's metric) or
    ``"regret"`` (fitness = metric minus the best reference's metric on the same instance).
    ``enabled=False`` or ``inner_generations=0`` switches the inner search off.
    ``stop_on_failure``: stop after the generation in which the heuristic failed
    (a failure is already the worst possible outcome).
    ``measure_nominal``: also evaluate the heuristic on the nominal set (``nominal_metric``).
    """

    epsilon: float
    inner_population: int = default("inner_population")
    inner_generations: int = default("inner_generations")
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
    inner_draws: int = PAPER_DRAWS
    objective: str = "metric"
    length: str = fallback("length")

    def __post_init__(self):
        try:
            valid = bool(np.isfinite(float(self.epsilon)) and float(self.epsilon) > 0)
        except (TypeError, ValueError):
            valid = False
        if not valid:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}")
        if int(self.inner_population) != self.inner_population or self.inner_population < 2:
            raise ValueError(f"inner_population (P_in) must be an integer >= 2, got {self.inner_population!r}")
        if int(self.inner_generations) != self.inner_generations or self.inner_generations < 0:
            raise ValueError(f"inner_generations (G_in) must be an integer >= 0, got {self.inner_generations!r}")
        if isinstance(self.inner_draws, bool) or int(self.inner_draws) != self.inner_draws or self.inner_draws < 1:
            raise ValueError(f"inner_draws (R) must be an integer >= 1, got {self.inner_draws!r}")
        for name, allowed in (("encoding", ENCODINGS), ("projection", PROJECTIONS),
                              ("constraint", CONSTRAINTS), ("noise", NOISE), ("objective", OBJECTIVES),
                              ("length", LENGTHS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")

    @property
    def active(self) -> bool:
        return bool(self.enabled) and self.inner_generations > 0


class AdversaryConfigError(SettingError, UserError):
    """A bad adversary setting: ``name`` names it (the tree's name), ``reason`` says why (a
    ``ValueError`` as every bad setting is, and a ``UserError``: one line for the user)."""


def checked_setting(setting: "str | Setting", value: Any) -> Any:
    """``value`` if it is a valid value of ``setting`` (a ``Setting``, or the tree's by name), else an
    ``AdversaryConfigError`` naming it."""
    try:
        return (SETTINGS[setting] if isinstance(setting, str) else setting).check(value)
    except SettingError as exc:
        raise AdversaryConfigError(exc.name, exc.reason) from None


@dataclass(frozen=True)
class AdversaryConfig(AdversarySettings):
    """RAISE's settings, the run's ``adversary`` section (``AdversarySettings``: eps, tau, A, the
    window, the objective, and the ``inner_search``) checked for a run of the adversary: eps given,
    the aggregation understood (``None``: the evaluation's, whatever it is), the objective
    understood (``None``: the paper's), and the search's switches known. ``resolve`` checks a
    run's section here once, ``AdversarialInstanceCallback`` keeps it, and a bad value is an
    ``AdversaryConfigError`` (a ``ValueError``) whose message starts with the setting's name.

    ``switches``: the inner search's switches that are no settings of a run (``noise``,
    ``executor``), passed on to it. ``instances_per_refresh``: ``one`` (the paper's: a refresh
    adds the winning distribution's representative draw) or ``draws`` (it adds all R draws of it).
    """

    switches: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        if self.epsilon is None:
            raise AdversaryConfigError("epsilon", "must be a finite number > 0, got None")
        if self.adversary_objective is None:  # left unset: the paper's
            object.__setattr__(self, "adversary_objective", fallback("adversary_objective"))
        if not isinstance(self.inner_search, InnerSearchSettings):
            raise AdversaryConfigError("inner_search", f"must be InnerSearchSettings, got {self.inner_search!r}")
        for name in ("epsilon", "tau_unit", "instances_per_refresh", "tau", "max_adversarial", "allow_no_refresh",
                     "nominal"):
            checked_setting(name, getattr(self, name))
        for name in ("inner_draws", "inner_population", "inner_generations", "projection", "encoding", "constraint",
                     "length"):
            checked_setting(name, getattr(self.inner_search, name))
        object.__setattr__(self, "epsilon", float(self.epsilon))
        for name, parse in (("aggregation", Aggregation.parse), ("adversary_objective", parse_objective)):
            try:
                if getattr(self, name) is not None:
                    parse(getattr(self, name))
            except ValueError as exc:
                raise AdversaryConfigError(name, str(exc)) from None
        for name in self.switches:
            if name in RENAMED_SETTINGS:
                raise AdversaryConfigError(name, f"is now {RENAMED_SETTINGS[name]}, the setting's name")
            if name not in EXTRA_SWITCHES:
                raise AdversaryConfigError(name, f"not a setting of the inner search (its switches: "
                                                 f"{', '.join(sorted(EXTRA_SWITCHES + SEARCH_SWITCHES))})")

    @classmethod
    def checked(cls, settings: AdversarySettings, **switches) -> "AdversaryConfig":
        """``settings`` (the run's section) checked here, with the extra ``switches``."""
        if isinstance(settings, cls) and not switches:
            return settings
        given = {f.name: getattr(settings, f.name) for f in fields(AdversarySettings)}
        return cls(**given, switches=MappingProxyType({**getattr(settings, "switches", {}), **switches}))

    @classmethod
    def of_keywords(cls, **flat) -> "AdversaryConfig":
        """From the settings by name (``epsilon=0.01, inner_population=4, projection="sphere"``) and
        the extra switches (``noise``, ``executor``)."""
        switches = {k: flat.pop(k) for k in list(flat) if k in EXTRA_SWITCHES or k not in SETTINGS}
        inner = {k: flat.pop(k) for k in list(flat) if k in INNER_SEARCH}
        for name, value in inner.items():  # checked here, to be named as this class names a bad value
            try:
                SETTINGS[name].check(value)
            except SettingError as exc:
                raise AdversaryConfigError(exc.name, exc.reason) from None
        return cls(**flat, inner_search=InnerSearchSettings(**inner), switches=MappingProxyType(switches))

    @property
    def all_switches(self) -> dict:
        """The inner search's switches that differ from its defaults, then the extra ones."""
        return {**self.inner_search.switches(), **self.switches}

    def search_options(self, draws: int) -> dict:
        """The inner search's keywords (``search``'s ``options``, the tree's names) for ``draws``
        instances per candidate distribution."""
        return {"inner_population": self.inner_search.inner_population,
                "inner_generations": self.inner_search.inner_generations, "inner_draws": draws,
                "objective": self.objective_rule.kind, **self.all_switches}

    def generations_per_refresh(self, pop_size: int) -> int:
        """Host generations between two refreshes, at least one: ``tau``, or ``tau`` samples in
        generations of ``pop_size`` (a refresh then comes at the first generation end after)."""
        return self.tau if self.tau_unit == "generations" else max(1, self.tau // pop_size)

    @property
    def aggregation_rule(self) -> Aggregation | None:
        """A over the instance set, or ``None``: the evaluation's, whatever it is."""
        return None if self.aggregation is None else Aggregation.parse(self.aggregation)

    def check_task(self, task, reach: bool = True) -> None:
        """A baseline named by the objective or the aggregation must be ``task``'s, and (``reach``:
        the adversary searches, as in a robust run) an eps the inner search is held within must
        be within the largest distance ``task``'s distributions can reach from its nominal
        histograms, or it would never be reached (``AdversaryConfigError`` naming the field)."""
        for name, baseline in (("adversary_objective", self.objective_rule.name),
                               ("aggregation", getattr(self.aggregation_rule, "reference", None))):
            if baseline:
                try:
                    named_baseline(task, baseline)
                except ValueError as exc:
                    raise AdversaryConfigError(name, str(exc)) from None
        if reach and self.inner_search.constraint != "none":
            beyond = check_epsilon(task, self.epsilon)
            if beyond is not None:
                raise AdversaryConfigError("epsilon", beyond)

    @property
    def objective_rule(self) -> Objective:
        return parse_objective(self.adversary_objective)
