"""The one-call inner search: genes -> distribution -> eps-projection -> instances -> fitness, driven by the GA.

``search(task, priority, epsilon)`` finds the distribution within B_eps(S) on which
``priority`` does worst (largest mean fitness over ``draws`` sampled instances: the
metric, or the regret against reference heuristics) and returns a representative
instance of it with its provenance. The task is seen only through its protocol:
``histogram``, ``sample_instance``, ``instance_length``, ``length_can_change``,
``shift.cells`` and ``evaluate``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from raise_plugin.engine.judge import evaluate_heuristic
from tasks.common.errors import HeuristicError
from tasks.common.shift import is_distribution

from . import genes as _genes
from .ga import AskTell, InnerGA, evaluate_batch
from .projection import PROJECTIONS, Projection, project

__all__ = ["SearchConfig", "Candidate", "GenerationRecord", "AdversarialResult", "Adversary",
           "AdversaryReferenceError", "AdversarialDraw", "search", "instance_seed", "sample_and_evaluate", "default_draws",
           "DEFAULT_DRAWS", "ENCODINGS", "CONSTRAINTS", "NOISE", "OBJECTIVES", "LENGTHS"]

ENCODINGS = ("basis", "flat")
CONSTRAINTS = ("ball", "none")
NOISE = ("common", "independent")
OBJECTIVES = ("metric", "regret")

# Instances drawn per candidate distribution (R), per task, from the re-sampling check of
# benchmarks/adversary_strength.py (table in docs/adversary.md): one OBP instance of 5000
# items already shows its distribution (R = 1 keeps ~all of the reported harm); OJSP keeps
# half from R = 8; OVRP's found harm is mostly one draw's luck, R = 16 halves the false part.
DEFAULT_DRAWS = {"obp": 1, "ojsp": 8, "ovrp": 16}
LENGTHS = ("gene", "nominal")


def default_draws(task) -> int:
    """The recommended ``draws`` (R) for a task (a task object or its name); 1 for unknown tasks."""
    name = task if isinstance(task, str) else getattr(task, "name", None)
    return int(DEFAULT_DRAWS.get(name, 1))


class AdversaryReferenceError(RuntimeError):
    """The regret objective had no usable reference: every reference failed on every candidate."""


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


def instance_seed(search_seed: int, index: int) -> int:
    """The sampling seed number ``index`` of a search (under common random numbers, draw r uses index r)."""
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
        return instance, evaluate_heuristic(task, priority, instance), None
    except HeuristicError as exc:
        return instance, float("inf"), str(exc) or type(exc).__name__


def _reference_on_draw(task, reference: Callable, distribution: np.ndarray, length: int | None,
                       seed: int) -> float:
    """A reference's metric on the same draw as the attacked heuristic (``inf`` if it failed)."""
    return sample_and_evaluate(task, reference, distribution, length, seed)[1]


def _call(fn: Callable, *args):
    return fn(*args)


def _named_references(references) -> list[tuple[str, Callable]]:
    """``(name, priority)`` pairs from callables or pairs; names from ``__name__`` when not given."""
    named = []
    for k, ref in enumerate(references or ()):
        if isinstance(ref, tuple) and len(ref) == 2 and callable(ref[1]):
            name, fn = str(ref[0]), ref[1]
        elif callable(ref):
            name, fn = str(getattr(ref, "__name__", None) or f"reference{k}"), ref
        else:
            raise TypeError(f"reference {k} must be a priority callable or a (name, callable) pair, got {ref!r}")
        named.append((name, fn))
    return named


def _best_reference(metrics: Sequence[float]) -> tuple[float | None, int | None]:
    """The smallest finite reference metric and its index (failed references are excluded)."""
    best, index = None, None
    for k, m in enumerate(metrics):
        if np.isfinite(m) and (best is None or m < best):
            best, index = float(m), k
    return best, index


def _representative_draw(fitnesses: Sequence[float], metrics: Sequence[float]) -> int:
    """The draw whose fitness is closest to the mean (lowest r on ties); the first failed draw if any."""
    failed = [r for r, m in enumerate(metrics) if m == np.inf]
    if failed:
        return failed[0]
    f = np.asarray(fitnesses, dtype=float)
    if not np.all(np.isfinite(f)):
        return 0
    gap = np.abs(f - f.mean())
    # equal gaps up to rounding (with R = 2 the gaps are always equal) go to the lowest r
    return int(np.flatnonzero(gap <= gap.min() + 1e-12 * max(1.0, abs(float(f.mean()))))[0])


def _evaluate_nominal(task, priority: Callable, instance) -> float:
    try:
        return evaluate_heuristic(task, priority, instance)
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
        self.length_can_change = bool(task.length_can_change) and config.length == "gene"

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
           draws: int = 1, references: Sequence | None = None, objective: str = "metric",
           all_draws: bool = False, **switches) -> AdversarialResult | None:
    """Find the distribution within B_eps(nominal) on which ``priority`` does worst, and an instance of it.

    Each candidate distribution is scored on ``draws`` (R) instances sampled from it;
    its fitness is the mean per-draw fitness. ``objective="metric"`` (the paper's):
    the per-draw fitness is the metric of ``priority``; ``objective="regret"``: the
    metric minus the smallest metric of the ``references`` on the same instance
    (a reference raising ``HeuristicError`` there is left out; if all do, the
    candidate's fitness is ``-inf`` and it counts in ``reference_failures``; if that
    happens to every candidate, ``AdversaryReferenceError``). ``references``: priority
    callables or ``(name, callable)`` pairs; under ``"metric"`` they are run on the
    returned instance only, to report its regret. A failure of ``priority`` is the
    worst case (fitness ``inf``) under both objectives. ``all_draws``: also return every
    draw of the winning distribution (``result.all_draws``; under ``"metric"`` the
    references then run on each).

    ``switches`` are the other ``SearchConfig`` fields (``encoding``, ``projection``,
    ``constraint``, ``noise``, ``enabled``, ...). ``executor``: any object with
    ``submit()`` returning a Future; the evaluations of one generation (heuristic and
    references) run through it, and the result does not depend on it. ``optimizer``: a
    factory ``(dimension, rng, population) -> ask/tell optimiser`` replacing the inner GA.
    Returns ``None`` when the search is off (``enabled=False`` or ``generations=0``).
    """
    config = SearchConfig(epsilon=epsilon, population=population, generations=generations, draws=draws,
                          objective=objective, **switches)
    named = _named_references(references)
    if config.objective == "regret" and not named:
        raise ValueError("objective='regret' needs at least one reference heuristic (references=...)")
    if not config.active:
        return None
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    R = int(config.draws)
    regret = config.objective == "regret"
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
    worst, worst_draws = None, None  # the winning candidate and its draws: (instance, failure, best reference)
    reference_evaluations = 0
    for generation in range(config.generations):
        gene_rows = np.asarray(opt.ask(), dtype=float)
        decoded = [adversary.decode(g) for g in gene_rows]
        first = len(candidates)
        # under common random numbers draw r of every candidate shares one seed; with R = 1
        # the independent seeds are those of a one-draw search (index = candidate + 1)
        seeds = [[instance_seed(seed, r if config.noise == "common" else (first + k) * R + r + 1)
                  for r in range(R)] for k in range(len(gene_rows))]
        jobs = []
        for (proj, length), cand_seeds in zip(decoded, seeds):
            for s in cand_seeds:
                jobs.append((sample_and_evaluate, task, priority, proj.distribution, length, s))
                if regret:
                    jobs.extend((_reference_on_draw, task, fn, proj.distribution, length, s) for _, fn in named)
        outcomes = iter(evaluate_batch(_call, jobs, executor))
        if regret:
            reference_evaluations += len(jobs) - len(gene_rows) * R
        batch = []
        for k, (g, (proj, length), cand_seeds) in enumerate(zip(gene_rows, decoded, seeds)):
            instances, metrics, failures, ref_best, ref_index, fitnesses = [], [], [], [], [], []
            for _ in cand_seeds:
                instance, metric, failure = next(outcomes)
                instances.append(instance)
                metrics.append(metric)
                failures.append(failure)
                if regret:
                    best, index = _best_reference([next(outcomes) for _ in named])
                    ref_best.append(best)
                    ref_index.append(index)
                    fitnesses.append(metric if metric == np.inf else
                                     -np.inf if best is None else metric - best)
                else:
                    fitnesses.append(metric)
            reference_failure = regret and any(b is None for b in ref_best)
            if any(m == np.inf for m in metrics):
                fitness = float("inf")
            elif reference_failure:
                fitness = float("-inf")
            else:
                fitness = float(np.mean(fitnesses))
            failure = next((f for f in failures if f is not None), None)
            cand = Candidate(generation, first + k, g.copy(), proj.distribution, proj.nearest, proj.distance,
                             proj.raw_distance, length, cand_seeds[0], float(np.mean(metrics)), failure,
                             seeds=tuple(cand_seeds), metrics=tuple(metrics), reference_metrics=tuple(ref_best),
                             fitnesses=tuple(fitnesses), fitness=fitness, reference_failure=reference_failure)
            batch.append(cand)
            if worst is None or fitness > worst.fitness:  # first on ties: evaluation order
                worst, worst_draws = cand, (instances, failures, ref_index)
        candidates.extend(batch)
        opt.tell(gene_rows, [c.fitness for c in batch])
        scores = np.array([c.fitness for c in batch])
        finite = scores[np.isfinite(scores)]
        failures = sum(c.failure is not None for c in batch)
        history.append(GenerationRecord(generation, len(batch), float(scores.max()), worst.fitness,
                                        float(finite.mean()) if finite.size else float("nan"), failures,
                                        sum(c.reference_failure for c in batch)))
        if failures and config.stop_on_failure:
            break

    reference_failures = sum(c.reference_failure for c in candidates)
    if regret and worst.fitness == -np.inf:
        raise AdversaryReferenceError(f"every reference failed on every candidate instance "
                                      f"({len(candidates)} candidates, references: {', '.join(n for n, _ in named)})")
    r = _representative_draw(worst.fitnesses, worst.metrics)
    instance, metric, failure = worst_draws[0][r], worst.metrics[r], worst_draws[1][r]
    kept = range(R) if all_draws else (r,)
    references: dict[int, tuple[float | None, int | None]] = {}  # draw -> (best reference metric, its index)
    if named and regret:
        references = {d: (worst.reference_metrics[d], worst_draws[2][d]) for d in kept}
    elif named:  # the paper's objective: the references run on the returned draws only, to report their regret
        ref_metrics = evaluate_batch(_evaluate_nominal, [(task, fn, worst_draws[0][d]) for d in kept
                                                         for _, fn in named], executor)
        reference_evaluations += len(ref_metrics)
        for i, d in enumerate(kept):
            references[d] = _best_reference(ref_metrics[i * len(named):(i + 1) * len(named)])
        reference_failures += sum(best is None for best, _ in references.values())

    def draw_of(d: int) -> AdversarialDraw:
        best, index = references.get(d, (None, None))
        name = None if best is None else named[index][0]
        return AdversarialDraw(d, worst_draws[0][d], worst.seeds[d], worst.metrics[d], worst_draws[1][d], best, name,
                               None if best is None else worst.metrics[d] - best)

    chosen = draw_of(r)
    reference_metric, reference_name, regret_value = chosen.reference_metric, chosen.reference_name, chosen.regret
    return AdversarialResult(
        instance=instance, distribution=worst.distribution, genes=worst.genes, nearest=worst.nearest,
        distance=worst.distance, metric=metric, seed=worst.seeds[r], length=worst.length,
        failure=failure, evaluations=len(candidates) * R, history=history, candidates=candidates,
        config=config, search_seed=seed, nominal_metric=nominal_metric, objective=config.objective,
        fitness=worst.fitness, draws=R, draw=r, reference_metric=reference_metric, regret=regret_value,
        reference_name=reference_name, references=tuple(n for n, _ in named),
        reference_evaluations=reference_evaluations, reference_failures=reference_failures,
        all_draws=tuple(draw_of(d) for d in range(R)) if all_draws else ())
