"""The one-call inner search: genes -> distribution -> eps-projection -> instance -> metric, driven by the GA.

``search(task, priority, epsilon)`` finds the instance within B_eps(S) on which
``priority`` does worst (largest metric) and returns it with its provenance. The
task is seen only through its protocol: ``histogram``, ``sample_instance``,
``instance_length``, ``length_can_change``, ``shift.cells`` and ``evaluate``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tasks.common.errors import HeuristicError
from tasks.common.shift import is_distribution

from . import genes as _genes
from .ga import AskTell, InnerGA, evaluate_batch
from .projection import PROJECTIONS, Projection, project

__all__ = ["SearchConfig", "Candidate", "GenerationRecord", "AdversarialResult", "Adversary",
           "search", "instance_seed", "sample_and_evaluate", "ENCODINGS", "CONSTRAINTS", "NOISE"]

ENCODINGS = ("basis", "flat")
CONSTRAINTS = ("ball", "none")
NOISE = ("common", "independent")


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
    ``noise``: ``"common"`` samples every candidate's instance from one seed (common
    random numbers, so candidates differ only by their distribution), ``"independent"``
    draws a fresh seed per candidate.
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
        for name, allowed in (("encoding", ENCODINGS), ("projection", PROJECTIONS),
                              ("constraint", CONSTRAINTS), ("noise", NOISE)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")

    @property
    def active(self) -> bool:
        return bool(self.enabled) and self.generations > 0


@dataclass(frozen=True)
class Candidate:
    """One evaluated candidate: its genes, distribution, projection, instance seed and metric.

    ``metric`` is ``inf`` when the heuristic failed on the instance (``failure`` says why).
    The instance itself is ``task.sample_instance(distribution, default_rng(seed), length)``.
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


@dataclass(frozen=True)
class GenerationRecord:
    """Per-generation summary: evaluations, worst metric of the generation and so far, failures."""

    generation: int
    evaluations: int
    worst_metric: float
    worst_so_far: float
    mean_metric: float
    failures: int


@dataclass(frozen=True)
class AdversarialResult:
    """The worst instance found and its provenance.

    ``instance``, ``distribution`` (p_proj), ``genes``, ``nearest`` (index of b in the
    nominal set), ``distance`` (d(p_proj, b)), ``metric`` (the heuristic's metric on the
    instance, lower is better for the heuristic; ``inf`` if it failed), ``seed`` (the
    instance's sampling seed), ``failure`` (the reason, if it failed), ``evaluations``,
    ``history`` (one ``GenerationRecord`` per generation), ``candidates`` (every
    evaluation, in order), ``nominal_metric`` (mean on the nominal set, if measured).
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

    @property
    def epsilon(self) -> float:
        return self.config.epsilon

    @property
    def degradation(self) -> float | None:
        """``metric - nominal_metric`` when the nominal metric was measured."""
        return None if self.nominal_metric is None else self.metric - self.nominal_metric


def instance_seed(search_seed: int, index: int) -> int:
    """The sampling seed of candidate ``index`` (0 under common random numbers)."""
    state = np.random.SeedSequence([int(search_seed), 0x5EED, int(index)]).generate_state(1, np.uint64)
    return int(state[0])


def sample_and_evaluate(task, priority: Callable, distribution: np.ndarray, length: int | None,
                        seed: int) -> tuple[Any, float, str | None]:
    """Sample an instance from ``distribution`` with ``seed`` and evaluate ``priority`` on it.

    Returns ``(instance, metric, failure)``; a ``HeuristicError`` becomes ``metric = inf``
    with its reason: a heuristic that fails on a feasible instance has found its worst case.
    """
    instance = task.sample_instance(distribution, np.random.default_rng(seed), length=length)
    try:
        return instance, float(task.evaluate(priority, instance)), None
    except HeuristicError as exc:
        return instance, float("inf"), str(exc) or type(exc).__name__


def _evaluate_nominal(task, priority: Callable, instance) -> float:
    try:
        return float(task.evaluate(priority, instance))
    except HeuristicError:
        return float("inf")


class Adversary:
    """Decodes genes into feasible distributions and instance lengths for one task and nominal set."""

    def __init__(self, task, config: SearchConfig, nominal: list | None = None):
        self.task = task
        self.config = config
        self.nominal = list(task.nominal_instances() if nominal is None else nominal)
        if not self.nominal:
            raise ValueError("the nominal set is empty")
        self.cells = int(task.shift.cells)
        self.histograms = np.stack([np.asarray(task.histogram(s), dtype=float) for s in self.nominal])
        if self.histograms.shape[1] != self.cells:
            raise ValueError(f"task histograms have {self.histograms.shape[1]} cells, shift.cells is {self.cells}")
        self.p_bar = self.histograms.mean(axis=0)  # p_bar, the mean nominal histogram
        self.nominal_length = int(round(np.mean([task.instance_length(s) for s in self.nominal])))
        self.length_can_change = bool(task.length_can_change)

    @property
    def dimension(self) -> int:
        """Genes per candidate: 18 for the basis encoding, K + 1 for the flat one."""
        return _genes.GENES if self.config.encoding == "basis" else self.cells + 1

    def mixture(self, genes) -> np.ndarray:
        """p_adv before projection (anchored at p_bar unless ``constraint="none"``)."""
        anchor = None if self.config.constraint == "none" else self.p_bar
        if self.config.encoding == "basis":
            return _genes.mixture(genes, anchor, self.cells)
        return _genes.flat_mixture(genes, anchor, self.cells)

    def decode(self, genes) -> tuple[Projection, int]:
        """The candidate's distribution (projected as configured) and its instance length."""
        genes = np.asarray(genes, dtype=float)
        p_adv = self.mixture(genes)
        mode = "none" if self.config.constraint == "none" else self.config.projection
        projected = project(p_adv, self.histograms, self.config.epsilon, mode)
        if not is_distribution(projected.distribution):
            raise AssertionError("projection left the probability simplex")
        length = _genes.instance_length(genes[-1], self.nominal_length, self.length_can_change)
        return projected, length


def search(task, priority: Callable, epsilon: float, *, nominal: list | None = None, seed: int = 0,
           population: int = 8, generations: int = 4, executor=None,
           optimizer: Callable[[int, np.random.Generator, int], AskTell] | None = None,
           **switches) -> AdversarialResult | None:
    """Find the instance within B_eps(nominal) on which ``priority`` does worst.

    ``switches`` are the other ``SearchConfig`` fields (``encoding``, ``projection``,
    ``constraint``, ``noise``, ``enabled``, ...). ``executor``: any object with
    ``submit()`` returning a Future; the evaluations of one generation run through it,
    and the result does not depend on it. ``optimizer``: a factory
    ``(dimension, rng, population) -> ask/tell optimiser`` replacing the inner GA.
    Returns ``None`` when the search is off (``enabled=False`` or ``generations=0``).
    """
    config = SearchConfig(epsilon=epsilon, population=population, generations=generations, **switches)
    if not config.active:
        return None
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    adversary = Adversary(task, config, nominal)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x6A]))
    if optimizer is None:
        opt: AskTell = InnerGA(adversary.dimension, rng, population=config.population,
                               crossover_rate=config.crossover_rate, mutation_rate=config.mutation_rate,
                               mutation_sigma=config.mutation_sigma)
    else:
        opt = optimizer(adversary.dimension, rng, config.population)

    nominal_metric = None
    if config.measure_nominal:
        metrics = evaluate_batch(_evaluate_nominal, [(task, priority, s) for s in adversary.nominal], executor)
        nominal_metric = float(np.mean(metrics))

    candidates: list[Candidate] = []
    history: list[GenerationRecord] = []
    worst_instance, worst = None, None
    for generation in range(config.generations):
        gene_rows = np.asarray(opt.ask(), dtype=float)
        decoded = [adversary.decode(g) for g in gene_rows]
        first = len(candidates)
        seeds = [instance_seed(seed, 0 if config.noise == "common" else first + k + 1)
                 for k in range(len(gene_rows))]
        jobs = [(task, priority, proj.distribution, length, s) for (proj, length), s in zip(decoded, seeds)]
        outcomes = evaluate_batch(sample_and_evaluate, jobs, executor)
        batch = []
        for k, (g, (proj, length), s, (instance, metric, failure)) in enumerate(
                zip(gene_rows, decoded, seeds, outcomes)):
            cand = Candidate(generation, first + k, g.copy(), proj.distribution, proj.nearest, proj.distance,
                             proj.raw_distance, length, s, metric, failure)
            batch.append(cand)
            if worst is None or metric > worst.metric:  # first on ties: evaluation order
                worst, worst_instance = cand, instance
        candidates.extend(batch)
        opt.tell(gene_rows, [c.metric for c in batch])
        metrics = np.array([c.metric for c in batch])
        finite = metrics[np.isfinite(metrics)]
        failures = sum(c.failure is not None for c in batch)
        history.append(GenerationRecord(generation, len(batch), float(metrics.max()), worst.metric,
                                        float(finite.mean()) if finite.size else float("nan"), failures))
        if failures and config.stop_on_failure:
            break

    return AdversarialResult(
        instance=worst_instance, distribution=worst.distribution, genes=worst.genes, nearest=worst.nearest,
        distance=worst.distance, metric=worst.metric, seed=worst.seed, length=worst.length,
        failure=worst.failure, evaluations=len(candidates), history=history, candidates=candidates,
        config=config, search_seed=seed, nominal_metric=nominal_metric)
