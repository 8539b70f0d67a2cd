"""The hook protocol of a robust method (``Callback``) and ``AdversarialInstanceCallback``, RAISE's inner loop.

Hooks receive the method (the driver, see ``raise_plugin.robust``) and a frozen
``RunSnapshot``. Thread safety, as the wrapper guarantees it:

- hooks are never called concurrently with each other: every call goes through one
  dispatch lock, whatever sampler thread triggers it;
- ``on_sample_evaluated`` runs while the population is locked, so it sees the sample
  exactly where it was registered; keep it quick;
- ``on_generation_end`` runs with parent selection and registration paused in every
  sampler thread (LLM calls and evaluations already under way go on), so a callback
  may change the instance set there (``method.add_instance``) and the very next
  selection sees the new scores;
- ``on_instances_updated`` is called from inside ``method.add_instance``.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

log = logging.getLogger("raise_plugin.callback")

__all__ = ["Callback", "AdversarialInstanceCallback", "AdversaryConfig", "AdversaryConfigError", "RunSnapshot", "ProgramView", "InstanceView",
           "SampleView", "InstanceUpdate", "Objective", "parse_objective", "POPULATION_REFERENCES"]

TAU_UNITS = ("generations", "samples")
PER_REFRESH = ("one", "draws")  # instances a refresh adds: the representative draw, or every draw

# regret:population compares the attacked best with this many other members (the next best
# by robust score): enough to find an instance on which some other member does better,
# and few enough that references cost at most three extra evaluations per candidate
POPULATION_REFERENCES = 3


@dataclass(frozen=True)
class Objective:
    """What the inner search maximises: the attacked program's ``metric`` (the paper's), or its
    regret against a reference on the same instance: the best of the task's classical
    ``baselines``, the one called ``name`` (``reference="baseline"``), or the best of the
    ``population``'s next ``members`` best programs."""

    kind: str = "metric"
    reference: str | None = None
    members: int = POPULATION_REFERENCES
    name: str | None = None

    def __str__(self) -> str:
        if self.kind == "metric":
            return "metric"
        if self.reference == "population" and self.members != POPULATION_REFERENCES:
            return f"regret:population:{self.members}"
        if self.reference == "baseline":
            return f"regret:{self.name}"
        return f"regret:{self.reference}"


def parse_objective(spec: "str | Objective") -> Objective:
    """``metric``, ``regret:baselines``, ``regret:NAME`` (one baseline of the task, checked when
    the task is known) or ``regret:population[:K]``; a ``ValueError`` names what is wrong."""
    if isinstance(spec, Objective):
        return spec
    text = str(spec).strip().lower()
    if text == "metric":
        return Objective()
    parts = text.split(":")
    if parts[0] == "regret" and len(parts) == 2 and parts[1] == "baselines":
        return Objective("regret", "baselines")
    if parts[0] == "regret" and len(parts) in (2, 3) and parts[1] == "population":
        members = POPULATION_REFERENCES
        if len(parts) == 3:
            if not parts[2].isdigit() or int(parts[2]) < 1:
                raise ValueError(f"adversary objective {spec!r}: K in regret:population:K must be an integer >= 1")
            members = int(parts[2])
        return Objective("regret", "population", members)
    if parts[0] == "regret" and len(parts) == 2 and parts[1]:
        return Objective("regret", "baseline", name=parts[1])
    raise ValueError(f"adversary objective {spec!r}: use metric, regret:baselines, regret:NAME (one classical "
                     f"baseline of the task) or regret:population[:K]")


@dataclass(frozen=True)
class ProgramView:
    """One heuristic: its id (hash of the program text), function code and robust score on the current set."""

    program_id: str
    code: str
    score: float
    algorithm: str = ""


@dataclass(frozen=True)
class InstanceView:
    """One member of the instance set; ``distance`` is d(p, nearest nominal histogram) (0 for nominal ones)."""

    instance_id: str
    origin: str
    distance: float = 0.0
    generation: int | None = None


@dataclass(frozen=True)
class RunSnapshot:
    """The state of a run at one event, frozen (later changes do not show through)."""

    generation: int
    samples: int
    budget: int | None
    population: tuple[ProgramView, ...]
    pending: tuple[ProgramView, ...]
    instance_set: tuple[InstanceView, ...]
    instance_set_version: int
    refreshes: int

    @property
    def instance_set_size(self) -> int:
        return len(self.instance_set)

    @property
    def best(self) -> ProgramView | None:
        """The population member with the highest finite robust score (``None`` if none has one)."""
        finite = [p for p in self.population if math.isfinite(p.score)]
        return max(finite, key=lambda p: p.score) if finite else None


@dataclass(frozen=True)
class SampleView:
    """A sample as registered: its 1-based order, the program, and its per-instance metrics on the current set."""

    sample: int
    program: ProgramView
    metrics: Mapping[str, float | None]
    instance_set_version: int
    error: str | None = None
    # what the run directory records beside: program_id, program (full text), score (None when
    # invalid), joined, duplicate, generation, broken, failed_on, sample_time, evaluate_time
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class InstanceUpdate:
    """What one change of the instance set did: members added and dropped, programs re-scored."""

    version: int
    added: tuple[InstanceView, ...]
    dropped: tuple[InstanceView, ...]
    rescored: tuple[ProgramView, ...]
    evaluations: int
    seconds: float
    provenance: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    arrays: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # recorded with the instance


class Callback:
    """Base class: every hook does nothing. Subclass and override the ones you need."""

    #: whether ``state_dict`` goes into checkpoints
    checkpointed = True

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint. Two callbacks of a run with the same
        key are told apart by their order (``#2``, ``#3`` after the first); override it to name
        what distinguishes two of one class instead."""
        return type(self).__qualname__

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        """Before the first sample (or, on resume, before the first new one)."""

    def on_sample_evaluated(self, method, snapshot: RunSnapshot, sample: SampleView) -> None:
        """After a sample is scored on the current set and registered (fired after the population
        lock is released, in registration order; selection and registration wait meanwhile)."""

    def on_generation_end(self, method, snapshot: RunSnapshot) -> None:
        """After survival moved the generation counter (selection paused)."""

    def on_instances_updated(self, method, snapshot: RunSnapshot, update: InstanceUpdate) -> None:
        """After the instance set changed and the population and pending samples were re-scored."""

    def on_run_end(self, method, snapshot: RunSnapshot) -> None:
        """After the last sample."""

    def on_exception(self, method, snapshot: RunSnapshot, exc: BaseException) -> None:
        """The run ended with ``exc`` (an interrupt, a failure of the host): everything recorded
        so far is saved, and ``resume`` continues. To end a run early, call
        ``method.request_stop(reason)`` from any hook instead."""

    def state_dict(self) -> dict:
        """JSON-serialisable state that a resumed run needs."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned."""


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
        from tasks.common.aggregation import Aggregation

        from .adversary.projection import PROJECTIONS
        from .adversary.search import CONSTRAINTS, ENCODINGS, LENGTHS

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
        from tasks.common.aggregation import Aggregation
        return Aggregation.parse(self.aggregation)

    @property
    def objective_rule(self) -> Objective:
        return parse_objective(self.objective)


class AdversarialInstanceCallback(Callback):
    """RAISE's inner loop: every ``tau`` generations, search the eps-ball for a hard instance and add it.

    Args:
        epsilon: radius eps of the ball B_eps(S) around the nominal set (mean absolute
            difference of histograms).
        tau: refresh interval tau: in host generations (the loop runs when generation % tau == 0),
            or in samples with ``tau_unit="samples"`` (the loop runs at the first generation end
            after each multiple of tau samples).
        tau_unit: ``generations`` (default: a host generation is ``pop_size`` samples, so 1000
            samples at pop 10 and tau 5 give 19-20 refreshes) or ``samples`` (the paper's cost
            appendix counts 200 generations of 5 samples for 1000 samples, 40 refreshes at
            tau 5: ``tau=25, tau_unit="samples"`` reproduces that count).
        inner_population: P_in, genes per inner generation.
        inner_generations: G_in, inner GA generations.
        aggregation: A over the instance set: ``mean``, ``min``, ``cvar:ALPHA`` or ``balanced[:W]``;
            set on the method's evaluation when the run starts.
        max_adversarial: window of adversarial instances kept (oldest dropped); nominal ones always stay.
        seed: the inner search of refresh k uses seed ``(seed, k)``, so a run is reproducible.
        searcher: the inner search, ``search(task, priority, epsilon, *, nominal, seed, population,
            generations, draws, references, objective, **switches)``; ``raise_plugin.adversary.search``
            by default.
        search_timeout: wall-clock seconds allowed for one inner search. The attacked program is
            generated code (it may hang, or allocate without bound, on a shifted instance), so it
            runs only in the engine's sandboxed workers, under their memory cap and audit hook
            and without the environment's secrets: with ``inner_parallel`` on the run's own
            workers, otherwise the whole search in one worker of its own. ``None``: the
            evaluation's time limit times ``inner_generations`` (each inner generation evaluates
            about as many instances as one evaluation of the set), times one plus the number of
            references. ``0``: no limit (without the run's workers, the search then runs in the
            calling thread; so it does whenever an ``executor`` switch is given). A search that
            runs out of time, or whose worker dies (the memory cap among the reasons), is
            skipped, logged and kept in ``skipped``; the run goes on.
        inner_parallel: ``True`` (default): the candidates and draws of each inner generation (and
            the references' runs on them) are evaluated in parallel on the sandboxed workers that
            evaluate the run's programs (every core with the default executor; on a Dask cluster
            each call in the sandbox pool of the Dask worker it lands on); the search itself
            (genes, projection, the GA) stays in this process. Each call there is under the
            workers' own time limit as well. ``False``, a ``serial`` executor, or a custom
            ``searcher``: the whole search runs serially in one sandboxed worker. The result is the
            same either way: every instance is sampled from its own seed, wherever it is evaluated.
        objective: what the inner search maximises (``Objective`` or its text): ``metric`` (the
            paper's), ``regret:baselines``, ``regret:NAME`` (against the task's baseline NAME
            alone, e.g. ``regret:bestfit``; the name is checked when the run starts) or
            ``regret:population[:K]``. Whatever the objective,
            the instance's provenance records ``metric``, ``reference_metric`` (the best
            classical baseline's, or the best reference's under regret) and ``regret``.
        draws: instances R each candidate distribution is scored on (the task's default,
            ``raise_plugin.adversary.default_draws``, when ``None``).
        per_refresh: ``one`` (the paper's: a refresh adds one instance, the winning distribution's
            representative draw) or ``draws`` (it adds all R draws, ``adv-K.R`` each with its own
            provenance; with R = 1 the two are the same). The window ``max_adversarial`` counts
            instances, so a run that keeps as many refreshes needs R times the window.
        **adversary_switches: passed to the search (``encoding``, ``projection``, ``constraint``,
            ``noise``, ``executor``). Every setting is checked here: a bad one is a
            ``ValueError`` naming the field when the callback is made, not a failed refresh.
    """

    def __init__(self, epsilon: float, tau: int = 5, inner_population: int = 8, inner_generations: int = 4,
                 aggregation: str = "mean", max_adversarial: int = 10, seed: int = 0, *,
                 searcher: Callable | None = None, search_timeout: float | None = None,
                 objective: "str | Objective" = "metric", draws: int | None = None,
                 tau_unit: str = "generations", per_refresh: str = "one", inner_parallel: bool = True,
                 **adversary_switches):
        config = AdversaryConfig(epsilon, tau, tau_unit, inner_population, inner_generations, aggregation,
                                 max_adversarial, objective, draws,
                                 MappingProxyType({k: v for k, v in adversary_switches.items()}), per_refresh)
        self.config = config
        self.epsilon = config.epsilon
        self.tau = config.tau
        self.tau_unit = config.tau_unit
        self.inner_population = config.inner_population
        self.inner_generations = config.inner_generations
        self.aggregation = config.aggregation_rule
        self.max_adversarial = config.max_adversarial
        self.seed = int(seed)
        self.objective = config.objective_rule
        self.draws = config.draws
        self.per_refresh = config.per_refresh
        self.adversary_switches = dict(config.switches)
        if searcher is None:  # the real search: check its settings now, naming the field
            from .adversary import SearchConfig
            SearchConfig(epsilon=self.epsilon, population=inner_population, generations=inner_generations,
                         draws=draws or 1, **{k: v for k, v in adversary_switches.items() if k != "executor"})
        if search_timeout is not None and not (math.isfinite(search_timeout) and search_timeout >= 0):
            raise ValueError(f"search_timeout must be a number of seconds >= 0, got {search_timeout!r}")
        self._searcher = searcher
        self.search_timeout = search_timeout
        self.inner_parallel = bool(inner_parallel)
        self.skipped: list[dict] = []
        self.refreshes = 0
        self.last_refresh_generation = 0
        self.last_refresh_samples = 0
        self.history: list[dict] = []

    @classmethod
    def from_config(cls, config: AdversaryConfig, seed: int = 0, **options) -> "AdversarialInstanceCallback":
        """The callback of a validated ``AdversaryConfig`` (``options``: ``searcher``, ``search_timeout``,
        ``inner_parallel``)."""
        return cls(config.epsilon, config.tau, config.inner_population, config.inner_generations,
                   config.aggregation, config.max_adversarial, seed, objective=config.objective,
                   draws=config.draws, tau_unit=config.tau_unit, per_refresh=config.per_refresh, **options,
                   **dict(config.switches))

    def check_task(self, task) -> None:
        """A baseline named by the objective or the aggregation must be ``task``'s: the robust
        method calls this when it is made, so a wrong name fails before the first sample."""
        from tasks.common.evaluation import named_baseline
        for field, name in (("objective", self.objective.name), ("aggregation", self.aggregation.reference)):
            if name:
                try:
                    named_baseline(task, name)
                except ValueError as exc:
                    raise AdversaryConfigError(field, str(exc), ": ") from None

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        # a callback used without the runner brings its aggregation to the evaluation
        method.evaluation.aggregation = self.aggregation

    def on_generation_end(self, method, snapshot: RunSnapshot) -> None:
        g = snapshot.generation
        if g == 0 or g <= self.last_refresh_generation:
            return
        if self.tau_unit == "generations" and g % self.tau:
            return
        if self.tau_unit == "samples" and snapshot.samples // self.tau <= self.last_refresh_samples // self.tau:
            return
        best = snapshot.best
        if best is None:  # every member failed: nothing to attack
            return
        self.refresh(method, snapshot, best)

    def refresh(self, method, snapshot: RunSnapshot, best: ProgramView) -> None:
        """One inner search on ``best`` and the update of the instance set."""
        from .adversary import AdversaryReferenceError, default_draws

        search = self._searcher
        if search is None:
            from .adversary import search
        k = self.refreshes + 1
        seed = int(np.random.SeedSequence([self.seed, k]).generate_state(1)[0])
        start = time.perf_counter()
        code = method.program_text(best.program_id)
        references = self._references(method, snapshot, best)
        draws = self.draws or default_draws(method.task)

        options = dict(nominal=method.nominal_instances(), seed=seed, population=self.inner_population,
                       generations=self.inner_generations, draws=draws, objective=self.objective.kind,
                       **self.adversary_switches)
        if self.per_refresh == "draws":
            options["all_draws"] = True
        call = (search, method.task, code, references, self.epsilon, options)

        limit = self.search_timeout
        if limit is None:
            limit = float(getattr(method.evaluation, "timeout_seconds", None) or 0) * self.inner_generations
            limit *= 1 + len(references)  # the references run on every candidate too
        pool = None
        if self.adversary_switches.get("executor") is not None:
            limit = 0  # a pool made in this process does not survive a fork: its own limits apply
        elif self.inner_parallel and self._searcher is None:  # ours evaluates only through its executor
            pool = _sandbox_pool(method)
        try:
            if self.objective.kind == "regret" and not references:
                raise _SearchFailed(f"no reference for {self.objective}: the population has no other valid member")
            if pool is not None:
                result = _on_pool(_inner_search, call, pool, limit)
            else:
                result = _inner_search(*call) if not limit else _in_sandbox(_inner_search, call, limit)
        except (_SearchFailed, AdversaryReferenceError) as exc:  # no usable reference: skip, as a hang
            seconds = time.perf_counter() - start
            record = getattr(method, "record_inner_search", None)
            if record is not None:
                record(0, seconds)
            self.skipped.append({"refresh": k, "generation": snapshot.generation, "program_id": best.program_id,
                                 "reason": str(exc), "seconds": seconds})
            self._mark_refreshed(snapshot)
            log.warning("inner search on %s skipped at generation %d: %s", best.program_id,
                        snapshot.generation, exc)
            return
        search_seconds = time.perf_counter() - start
        inner_evaluations = int(getattr(result, "evaluations", 0) or 0) if result is not None else 0
        reference_evaluations = int(getattr(result, "reference_evaluations", 0) or 0) if result is not None else 0
        record = getattr(method, "record_inner_search", None)
        if record is not None:
            record(inner_evaluations + reference_evaluations, search_seconds)
        if result is None:  # the inner search is switched off (enabled=False or generations=0)
            self._mark_refreshed(snapshot)
            return
        provenance = {
            "refresh": k,
            "generation": snapshot.generation,
            "samples": snapshot.samples,
            "program_id": best.program_id,
            "program_score": best.score,
            "epsilon": self.epsilon,
            "seed": seed,
            "inner_population": self.inner_population,
            "inner_generations": self.inner_generations,
            "switches": {key: _jsonable(v) for key, v in self.adversary_switches.items()},
            "objective": str(self.objective),
            "draws": getattr(result, "draws", draws),
            "fitness": _float_or_none(getattr(result, "fitness", None)),
            "metric": _float_or_none(getattr(result, "metric", None)),
            "reference_metric": _float_or_none(getattr(result, "reference_metric", None)),
            "regret": _float_or_none(getattr(result, "regret", None)),
            "reference": getattr(result, "reference_name", None),
            "references": [name for name, _ in references],
            "search_seconds": search_seconds,
            "inner_evaluations": inner_evaluations,
            "reference_evaluations": reference_evaluations,
        }
        arrays = {name: getattr(result, name) for name in ("distribution", "genes", "nearest")
                  if getattr(result, name, None) is not None}
        self.refreshes = k
        self._mark_refreshed(snapshot)
        added = [(f"adv-{k}", result.instance, provenance)]
        if self.per_refresh == "draws" and getattr(result, "all_draws", ()):
            added = [(f"adv-{k}.{d.draw}", d.instance,
                      {**provenance, "draw": d.draw, "draw_seed": d.seed, "metric": _float_or_none(d.metric),
                       "reference_metric": _float_or_none(d.reference_metric), "regret": _float_or_none(d.regret),
                       "reference": d.reference_name}) for d in result.all_draws]
        updates = [method.add_instance(instance, instance_id=name, origin="adversarial",
                                       distance=float(getattr(result, "distance", float("nan"))),
                                       generation=snapshot.generation, max_adversarial=self.max_adversarial,
                                       provenance=extra, arrays=arrays) for name, instance, extra in added]
        update = updates[-1]
        self.history.append({"refresh": k, "generation": snapshot.generation, "instance_id": added[0][0],
                             **({"instances": len(added)} if len(added) > 1 else {}),
                             "objective": provenance["objective"], "metric": provenance["metric"],
                             "reference_metric": provenance["reference_metric"], "regret": provenance["regret"],
                             "distance": _float_or_none(getattr(result, "distance", None)),
                             "search_seconds": search_seconds, "inner_evaluations": inner_evaluations,
                             "reference_evaluations": reference_evaluations,
                             "rescored": len(update.rescored),
                             "evaluations": sum(u.evaluations for u in updates),
                             "rescore_seconds": sum(u.seconds for u in updates)})

    def _mark_refreshed(self, snapshot: RunSnapshot) -> None:
        """This generation's refresh is done (made, skipped or switched off): not again until tau more."""
        self.last_refresh_generation, self.last_refresh_samples = snapshot.generation, snapshot.samples

    def _references(self, method, snapshot: RunSnapshot, best: ProgramView) -> list[tuple[str, Any]]:
        """``(name, priority or program text)`` of the references: the task's baselines (under
        ``metric`` too, so every instance records its regret), or the population's next best."""
        if self.objective.reference == "population":
            others = sorted((p for p in snapshot.population
                             if p.program_id != best.program_id and math.isfinite(p.score)),
                            key=lambda p: -p.score)
            chosen = list(dict.fromkeys(p.program_id for p in others))[: self.objective.members]
            return [(pid, method.program_text(pid)) for pid in chosen]
        if self.objective.reference == "baseline":
            from tasks.common.evaluation import named_baseline
            return [named_baseline(method.task, self.objective.name)]
        baselines = getattr(method.task, "baselines", None) or {}
        return list(baselines.items())

    def state_dict(self) -> dict:
        return {"refreshes": self.refreshes, "last_refresh_generation": self.last_refresh_generation,
                "last_refresh_samples": self.last_refresh_samples,
                "history": list(self.history), "skipped": list(self.skipped)}

    def load_state_dict(self, state: dict) -> None:
        self.refreshes = int(state.get("refreshes", 0))
        self.last_refresh_generation = int(state.get("last_refresh_generation", 0))
        self.last_refresh_samples = int(state.get("last_refresh_samples", 0))
        self.history = list(state.get("history", []))
        self.skipped = list(state.get("skipped", []))


class _SearchFailed(Exception):
    """The inner search ran out of time or its process died."""


def _inner_search(search: Callable, task, code: str, references: list, epsilon: float, options: dict):
    """One inner search on the program ``code``; ``references`` are ``(name, program text or priority)``.
    The programs are compiled where they are first called: in this sandboxed worker, or in the
    adversary's executor's workers when it has one (never in the engine's process)."""
    from .engine.jobs import SourcePriority

    refs = [(name, SourcePriority(ref) if isinstance(ref, str) else ref) for name, ref in references]
    return search(task, SourcePriority(code), epsilon, references=refs or None, **options)


def _in_sandbox(fn: Callable, args: tuple, seconds: float):
    """``fn(*args)`` in one of the engine's sandboxed workers (memory cap, audit hook, no secrets in
    its environment), killed after ``seconds``: the attacked program is generated code."""
    from .engine import ProcessExecutor, SandboxLimits

    with ProcessExecutor(1, SandboxLimits(timeout=seconds)) as pool, \
            _as_search_failure(pool, f"the inner search exceeded {seconds:g} s"):
        return pool.submit(fn, *args).result()


@contextlib.contextmanager
def _as_search_failure(pool, timed_out: str):
    """A sandboxed search's time-out, memory error or dead worker as one ``_SearchFailed`` line."""
    from .engine import CallTimeout, WorkerDied

    try:
        yield
    except CallTimeout:
        raise _SearchFailed(timed_out) from None
    except MemoryError:
        raise _SearchFailed(f"the inner search ran out of memory (the sandbox caps it at "
                            f"{pool.limits.memory_mb} MB)") from None
    except WorkerDied as exc:
        raise _SearchFailed(f"the inner search's worker died ({exc})") from None


def _sandbox_pool(method):
    """What runs the run's calls in its sandboxed workers: its ``ProcessExecutor``, or a Dask
    executor's ``sandboxed_calls()`` (each call in a sandbox pool local to its Dask worker);
    ``None`` otherwise (a serial executor, programs run in the calling thread, a method without
    an engine)."""
    from .engine import ProcessExecutor

    executor = getattr(method, "engine_executor", None)
    if isinstance(executor, ProcessExecutor):
        return executor
    sandboxed = getattr(executor, "sandboxed_calls", None)
    return sandboxed() if callable(sandboxed) else None


def _on_pool(fn: Callable, args: tuple, pool, seconds: float):
    """``fn(*args)`` in this thread with the search's evaluations on ``pool``'s sandboxed
    workers, all of them within ``seconds`` (``0``: no limit but the workers' own)."""
    search, task, code, references, epsilon, options = args
    bounded = _Deadline(pool, seconds)
    try:
        with _as_search_failure(pool, f"an evaluation of the inner search exceeded {pool.limits.timeout:g} s"):
            return fn(search, task, code, references, epsilon, {**options, "executor": bounded})
    finally:
        bounded.cancel()  # after a failure, what has not started does not hold up the run's workers


class _Deadline:
    """An executor's ``submit`` under one wall-clock limit for all it was given: a result not
    there by the deadline cancels what has not started and raises ``_SearchFailed`` (a call
    under way ends at its executor's own time limit)."""

    def __init__(self, executor, seconds: float):
        self._executor = executor
        self.workers = getattr(executor, "workers", 1)
        self._seconds = seconds
        self._deadline = time.perf_counter() + seconds if seconds else None
        self._futures: list = []

    def submit(self, fn: Callable, *args):
        future = self._executor.submit(fn, *args)
        self._futures.append(future)
        return _Bounded(future, self)

    def wait(self, future):
        if self._deadline is not None:
            done, _ = concurrent.futures.wait([future], timeout=max(0.0, self._deadline - time.perf_counter()))
            if not done:
                self.cancel()
                raise _SearchFailed(f"the inner search exceeded {self._seconds:g} s")
        return future.result()

    def cancel(self) -> None:
        for future in self._futures:
            future.cancel()


class _Bounded:
    """A future whose ``result()`` waits no later than its ``_Deadline``."""

    def __init__(self, future, deadline: _Deadline):
        self._future = future
        self._deadline = deadline

    def result(self):
        return self._deadline.wait(self._future)


def _float_or_none(x):
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)
