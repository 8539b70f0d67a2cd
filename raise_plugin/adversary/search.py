"""The one-call inner search: genes -> distribution -> eps-projection -> instances -> fitness, driven by the GA.

``search(task, priority, epsilon)`` finds the distribution within B_eps(S) on which
``priority`` does worst (largest mean fitness over ``inner_draws`` sampled instances: the
metric, or the regret against reference heuristics) and returns a representative
instance of it with its provenance. The task is seen only through its protocol:
``histogram``, ``sample_instance``, ``instance_length``, ``length_can_change``,
``shift.cells``, ``evaluate`` and ``default_draws``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from raise_plugin.engine.judge import evaluate_heuristic
from raise_plugin.settings import default
from tasks import get_task
from tasks.common.errors import HeuristicError

from .decoding import Adversary
from .ga import AskTell, InnerGA, evaluate_batch
from .projection import Projection
from .results import AdversarialDraw, AdversarialResult, Candidate, GenerationRecord
from .adversary_config import PAPER_DRAWS, RENAMED, SearchConfig

__all__ = ["AdversaryReferenceError", "search", "instance_seed", "sample_and_evaluate", "default_draws", "metric_or_inf"]


def default_draws(task) -> int:
    """The recommended ``inner_draws`` (R) for a task: its own ``default_draws`` (``Task.default_draws``,
    1 unless the task sets it); a task's name is looked up in the registry."""
    if isinstance(task, str):
        task = get_task(task)
    return int(getattr(task, "default_draws", 1))


class AdversaryReferenceError(RuntimeError):
    """The regret objective had no usable reference: every reference failed on every candidate."""


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


def metric_or_inf(task, priority: Callable, instance) -> float:
    """The metric of ``priority`` on ``instance`` (a program's in a process of its own, where a judge
    runs it), ``inf`` where it fails."""
    try:
        return evaluate_heuristic(task, priority, instance)
    except HeuristicError:
        return float("inf")


def search(task, priority: Callable, epsilon: float, *, nominal: list | None = None, seed: int = 0,
           inner_population: int = default("inner_population"), inner_generations: int = default("inner_generations"),
           executor=None,
           optimizer: Callable[[int, np.random.Generator, int], AskTell] | None = None,
           inner_draws: int = PAPER_DRAWS, references: Sequence | None = None, objective: str = "metric",
           all_draws: bool = False, **switches) -> AdversarialResult | None:
    """Find the distribution within B_eps(nominal) on which ``priority`` does worst, and an instance of it.

    Each candidate distribution is scored on ``inner_draws`` (R) instances sampled from it;
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
    Returns ``None`` when the search is off (``enabled=False`` or ``inner_generations=0``).
    """
    renamed = sorted(RENAMED.keys() & switches.keys())
    if renamed:
        old = renamed[0]
        raise TypeError(f"search() got the keyword {old!r}: it is now {RENAMED[old]!r}, the setting's name")
    config = SearchConfig(epsilon=epsilon, inner_population=inner_population, inner_generations=inner_generations,
                          inner_draws=inner_draws,
                          objective=objective, **switches)
    named = _named_references(references)
    if config.objective == "regret" and not named:
        raise ValueError("objective='regret' needs at least one reference heuristic (references=...)")
    if not config.active:
        return None
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    R = int(config.inner_draws)
    regret = config.objective == "regret"
    adversary = Adversary(task, config, nominal)
    opt = _make_optimiser(adversary, config, seed, optimizer)
    nominal_metric = None
    if config.measure_nominal:
        metrics = evaluate_batch(metric_or_inf, [(task, priority, s) for s in adversary.nominal], executor)
        nominal_metric = float(np.mean(metrics))

    candidates, history, worst, worst_draws, reference_evaluations = _evolve(task, priority, named, adversary, opt,
                                                                             config, seed, executor)
    reference_failures = sum(c.reference_failure for c in candidates)
    if regret and worst.fitness == -np.inf:
        raise AdversaryReferenceError(f"every reference failed on every candidate instance "
                                      f"({len(candidates)} candidates, references: {', '.join(n for n, _ in named)})")
    r = _representative_draw(worst.fitnesses, worst.metrics)
    kept = range(R) if all_draws else (r,)
    references, evaluations, failures = _references_on_winner(task, named, regret, worst, worst_draws, kept,
                                                              executor)
    reference_evaluations += evaluations
    reference_failures += failures
    chosen = _winning_draw(worst, worst_draws, references, named, r)
    return AdversarialResult(
        instance=chosen.instance, distribution=worst.distribution, genes=worst.genes, nearest=worst.nearest,
        distance=worst.distance, metric=chosen.metric, seed=chosen.seed, length=worst.length,
        failure=chosen.failure, evaluations=len(candidates) * R, history=history, candidates=candidates,
        config=config, search_seed=seed, nominal_metric=nominal_metric, objective=config.objective,
        fitness=worst.fitness, draws=R, draw=r, reference_metric=chosen.reference_metric, regret=chosen.regret,
        reference_name=chosen.reference_name, references=tuple(n for n, _ in named),
        reference_evaluations=reference_evaluations, reference_failures=reference_failures,
        all_draws=tuple(_winning_draw(worst, worst_draws, references, named, d) for d in range(R)) if all_draws else ())


def _evolve(task, priority: Callable, named: list, adversary: Adversary, opt: AskTell, config: SearchConfig,
            seed: int, executor) -> tuple[list[Candidate], list[GenerationRecord], Candidate, tuple, int]:
    """The inner GA's generations: every candidate, one record per generation, the winning candidate
    (the largest fitness, the first on ties) with what it kept of its draws (instances, failures,
    best references), and the evaluations of the references."""
    R = int(config.inner_draws)
    regret = config.objective == "regret"
    candidates: list[Candidate] = []
    history: list[GenerationRecord] = []
    worst, worst_draws = None, None
    reference_evaluations = 0
    for generation in range(config.inner_generations):
        gene_rows = np.asarray(opt.ask(), dtype=float)
        decoded = [adversary.decode(g) for g in gene_rows]
        first = len(candidates)
        seeds = _draw_seeds(seed, config, first, len(gene_rows))
        jobs = _generation_jobs(task, priority, named, decoded, seeds, regret)
        outcomes = iter(evaluate_batch(_call, jobs, executor))
        if regret:
            reference_evaluations += len(jobs) - len(gene_rows) * R
        batch = []
        for k, (genes, (projected, length), cand_seeds) in enumerate(zip(gene_rows, decoded, seeds)):
            cand, draws_of_cand = _score_candidate(generation, first + k, genes, projected, length, cand_seeds,
                                                   outcomes, len(named), regret)
            batch.append(cand)
            if worst is None or cand.fitness > worst.fitness:  # first on ties: evaluation order
                worst, worst_draws = cand, draws_of_cand
        candidates.extend(batch)
        opt.tell(gene_rows, [c.fitness for c in batch])
        history.append(_generation_record(generation, batch, worst.fitness))
        if history[-1].failures and config.stop_on_failure:
            break
    return candidates, history, worst, worst_draws, reference_evaluations


def _make_optimiser(adversary: Adversary, config: SearchConfig, seed: int,
                    optimizer: Callable[[int, np.random.Generator, int], AskTell] | None) -> AskTell:
    """The ask/tell optimiser over the genes: the inner GA, or what ``optimizer`` makes."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x6A]))
    if optimizer is None:
        return InnerGA(adversary.dimension, rng, population=config.inner_population,
                       crossover_rate=config.crossover_rate, mutation_rate=config.mutation_rate,
                       mutation_sigma=config.mutation_sigma)
    return optimizer(adversary.dimension, rng, config.inner_population)


def _draw_seeds(seed: int, config: SearchConfig, first: int, count: int) -> list[list[int]]:
    """The sampling seeds of the draws of ``count`` candidates numbered from ``first``: under common
    random numbers draw r of every candidate shares one seed; with R = 1 the independent seeds
    are those of a one-draw search (index = candidate + 1)."""
    R = int(config.inner_draws)
    return [[instance_seed(seed, r if config.noise == "common" else (first + k) * R + r + 1)
             for r in range(R)] for k in range(count)]


def _generation_jobs(task, priority: Callable, named: list, decoded: list, seeds: list[list[int]],
                     regret: bool) -> list[tuple]:
    """The evaluations of one generation, in order: for each candidate and draw, the attacked
    heuristic, then (under regret) each reference on the same draw."""
    jobs = []
    for (projected, length), cand_seeds in zip(decoded, seeds):
        for s in cand_seeds:
            jobs.append((sample_and_evaluate, task, priority, projected.distribution, length, s))
            if regret:
                jobs.extend((_reference_on_draw, task, fn, projected.distribution, length, s) for _, fn in named)
    return jobs


def _score_candidate(generation: int, index: int, genes: np.ndarray, projected: Projection, length: int,
                     cand_seeds: list[int], outcomes, references: int, regret: bool) -> tuple[Candidate, tuple]:
    """One candidate from the outcomes of its draws (taken from ``outcomes`` in job order), and
    what the winner keeps of its draws: their instances, failures and best references."""
    instances, metrics, failures, ref_best, ref_index, fitnesses = [], [], [], [], [], []
    for _ in cand_seeds:
        instance, metric, failure = next(outcomes)
        instances.append(instance)
        metrics.append(metric)
        failures.append(failure)
        if regret:
            best, best_index = _best_reference([next(outcomes) for _ in range(references)])
            ref_best.append(best)
            ref_index.append(best_index)
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
    cand = Candidate(generation, index, genes.copy(), projected.distribution, projected.nearest, projected.distance,
                     projected.raw_distance, length, cand_seeds[0], float(np.mean(metrics)), failure,
                     seeds=tuple(cand_seeds), metrics=tuple(metrics), reference_metrics=tuple(ref_best),
                     fitnesses=tuple(fitnesses), fitness=fitness, reference_failure=reference_failure)
    return cand, (instances, failures, ref_index)


def _generation_record(generation: int, batch: list[Candidate], worst_so_far: float) -> GenerationRecord:
    scores = np.array([c.fitness for c in batch])
    finite = scores[np.isfinite(scores)]
    failures = sum(c.failure is not None for c in batch)
    return GenerationRecord(generation, len(batch), float(scores.max()), worst_so_far,
                            float(finite.mean()) if finite.size else float("nan"), failures,
                            sum(c.reference_failure for c in batch))


def _references_on_winner(task, named: list, regret: bool, worst: Candidate, worst_draws: tuple, kept,
                          executor) -> tuple[dict[int, tuple[float | None, int | None]], int, int]:
    """For each kept draw of the winner, the best reference metric and its index; with the
    evaluations this took and the draws left without a usable reference. Under regret the
    search found them already; under the paper's objective the references run on these
    draws only, to report their regret."""
    if named and regret:
        return {d: (worst.reference_metrics[d], worst_draws[2][d]) for d in kept}, 0, 0
    if not named:
        return {}, 0, 0
    ref_metrics = evaluate_batch(metric_or_inf, [(task, fn, worst_draws[0][d]) for d in kept
                                                     for _, fn in named], executor)
    references = {d: _best_reference(ref_metrics[i * len(named):(i + 1) * len(named)]) for i, d in enumerate(kept)}
    return references, len(ref_metrics), sum(best is None for best, _ in references.values())


def _winning_draw(worst: Candidate, worst_draws: tuple, references: dict, named: list, d: int) -> AdversarialDraw:
    """Draw ``d`` of the winning distribution, with its best reference and regret when one ran on it."""
    best, index = references.get(d, (None, None))
    name = None if best is None else named[index][0]
    return AdversarialDraw(d, worst_draws[0][d], worst.seeds[d], worst.metrics[d], worst_draws[1][d], best, name,
                           None if best is None else worst.metrics[d] - best)
