"""What an inner search returns: the winning distribution and instance (``AdversarialResult``),
its draws, and the record of every candidate and generation."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .adversary_config import SearchConfig

__all__ = ["Candidate", "GenerationRecord", "AdversarialDraw", "AdversarialResult"]


@dataclass(frozen=True)
class Candidate:
    """One evaluated candidate: its genes, distribution, projection, sampling seeds, metrics and fitness.

    Draw r of the candidate is ``task.sample_instance(distribution, default_rng(seeds[r]), length)``;
    ``seed`` is the seed of draw 0. ``metrics[r]`` is the heuristic's metric on draw r
    (``inf`` when it failed; ``failure`` gives the first reason), ``metric`` their mean.
    ``reference_metrics[r]`` is the best (smallest) reference metric on draw r (``None``
    when no reference ran or every one failed). ``fitnesses[r]`` is the per-draw fitness
    (the metric, or the regret ``metrics[r] - reference_metrics[r]``) and ``fitness``
    the candidate's score: their mean; ``inf`` if the heuristic failed on any draw,
    ``-inf`` under regret if some draw had no usable reference (``reference_failure``).
    """

    generation: int
    index: int
    genes: np.ndarray
    distribution: np.ndarray
    nearest: int
    distance: float
    raw_distance: float
    length: int
    seed: int
    metric: float
    failure: str | None = None
    seeds: tuple[int, ...] = ()
    metrics: tuple[float, ...] = ()
    reference_metrics: tuple[float | None, ...] = ()
    fitnesses: tuple[float, ...] = ()
    fitness: float | None = None
    reference_failure: bool = False

    def __post_init__(self):
        # records built the old way (one draw, the metric objective) fill in the per-draw fields
        if not self.seeds:
            object.__setattr__(self, "seeds", (int(self.seed),))
        if not self.metrics:
            object.__setattr__(self, "metrics", (float(self.metric),))
        if not self.fitnesses:
            object.__setattr__(self, "fitnesses", tuple(self.metrics))
        if self.fitness is None:
            object.__setattr__(self, "fitness", float(self.metric))


@dataclass(frozen=True)
class GenerationRecord:
    """Per-generation summary, in terms of fitness (the metric under ``objective="metric"``).

    ``evaluations``: candidates scored this generation; ``worst_metric`` / ``mean_metric``:
    the largest / mean finite candidate fitness of the generation; ``worst_so_far``: the
    largest fitness of the search so far; ``failures``: candidates on which the heuristic
    failed; ``reference_failures``: candidates left without a usable reference.
    """

    generation: int
    evaluations: int
    worst_metric: float
    worst_so_far: float
    mean_metric: float
    failures: int
    reference_failures: int = 0


@dataclass(frozen=True)
class AdversarialDraw:
    """One draw r of the winning distribution: its instance, sampling seed, the heuristic's
    metric and failure on it, and the best reference's metric, name and the regret (``None``
    without references)."""

    draw: int
    instance: Any
    seed: int
    metric: float
    failure: str | None = None
    reference_metric: float | None = None
    reference_name: str | None = None
    regret: float | None = None


@dataclass(frozen=True)
class AdversarialResult:
    """The worst distribution found, a representative instance of it, and their provenance.

    ``instance``: among the R draws of the winning candidate, the one whose per-draw
    fitness is closest to the candidate's mean fitness (lowest r on ties; the draw on
    which the heuristic failed, if it did). ``distribution`` (p_proj), ``genes``,
    ``nearest`` (index of b in the nominal set), ``distance`` (d(p_proj, b)),
    ``metric`` (the heuristic's metric on the instance, lower is better for the
    heuristic; ``inf`` if it failed), ``seed`` (the instance's sampling seed), ``draw``
    (its r), ``failure`` (the reason, if it failed), ``evaluations`` (program-instance
    evaluations of the attacked heuristic), ``history`` (one ``GenerationRecord`` per
    generation), ``candidates`` (every candidate, in order), ``nominal_metric`` (mean on
    the nominal set, if measured). ``objective``, ``draws`` (R) and ``fitness`` (the
    winning candidate's mean fitness over its draws). With references:
    ``reference_metric`` (the smallest reference metric on the instance),
    ``reference_name`` (that reference), ``regret`` (``metric - reference_metric``),
    ``references`` (all names), ``reference_evaluations`` (program-instance evaluations
    of the references) and ``reference_failures`` (candidates left without a usable
    reference). ``all_draws``: with ``search(..., all_draws=True)``, every draw of the
    winning distribution (``AdversarialDraw``, in draw order; the representative is
    ``all_draws[draw]``), each with its own reference metric and regret.
    """

    instance: Any
    distribution: np.ndarray
    genes: np.ndarray
    nearest: int
    distance: float
    metric: float
    seed: int
    length: int
    failure: str | None
    evaluations: int
    history: list[GenerationRecord]
    candidates: list[Candidate]
    config: SearchConfig
    search_seed: int
    nominal_metric: float | None = None
    objective: str = "metric"
    fitness: float | None = None
    draws: int = 1
    draw: int = 0
    reference_metric: float | None = None
    regret: float | None = None
    reference_name: str | None = None
    references: tuple[str, ...] = ()
    reference_evaluations: int = 0
    reference_failures: int = 0
    all_draws: tuple[AdversarialDraw, ...] = ()

    @property
    def epsilon(self) -> float:
        return self.config.epsilon

    @property
    def degradation(self) -> float | None:
        """``metric - nominal_metric`` when the nominal metric was measured."""
        return None if self.nominal_metric is None else self.metric - self.nominal_metric
