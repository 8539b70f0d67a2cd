"""``AdversarialInstanceCallback``, RAISE's inner loop as a callback: every ``tau`` generations,
search the eps-ball around the nominal set for a hard instance and add it to the instance set."""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable

import numpy as np

from tasks.common.evaluation import named_baseline

from ..adversary.objective import Objective
from ..adversary.sandboxed import SearchFailed, in_one_worker, on_run_workers, sandbox_pool, search_program
from ..adversary.search import AdversaryReferenceError, default_draws, search
from ..adversary.adversary_config import AdversaryConfig, AdversaryConfigError, SearchConfig, checked_setting
from ..config import AdversarySettings, BudgetSettings
from ..errors import PluginWarning
from ..settings import Setting
from .hooks import Callback, ProgramView, RunSnapshot

log = logging.getLogger("raise_plugin.robust")

__all__ = ["AdversarialInstanceCallback", "IdleAdversaryWarning", "idle_adversary", "SEARCH_TIMEOUT"]

# the callback's own setting, no run's: checked as the tree's are
SEARCH_TIMEOUT = Setting("search_timeout", None, "float", "wall-clock seconds allowed for one inner search (0: no "
                         "limit)", unit="seconds", low=0)


class AdversarialInstanceCallback(Callback):
    """RAISE's inner loop: every ``tau`` generations, search the eps-ball for a hard instance and add it.

    Made from the run's ``adversary`` settings (``AdversarialInstanceCallback(config.adversary,
    seed=...)``: an ``AdversarySettings``, checked here as an ``AdversaryConfig`` and kept as
    ``config``), or from them by name (``AdversarialInstanceCallback(epsilon=0.002, tau=2)``),
    which builds the same config. Every setting is checked when the callback is made: a bad one is
    a ``ValueError`` naming the field, not a failed refresh.

    Settings (docs/settings.md; read from ``config`` where used, never copied):
        epsilon: radius eps of the ball B_eps(S) around the nominal set (mean absolute
            difference of histograms).
        tau: refresh interval tau: in host generations (the loop runs when generation % tau == 0),
            or in samples with ``tau_unit="samples"`` (the loop runs at the first generation end
            after each multiple of tau samples).
        tau_unit: ``generations`` (default: a host generation is ``pop_size`` samples, so 1000
            samples at pop 10 and tau 5 give 19-20 refreshes) or ``samples`` (the paper's cost
            appendix counts 200 generations of 5 samples for 1000 samples, 40 refreshes at
            tau 5: ``tau=25, tau_unit="samples"`` reproduces that count).
        inner_population, inner_generations: P_in and G_in of the inner GA (``inner_search``).
        aggregation: A over the instance set: ``mean``, ``min``, ``cvar:ALPHA`` or ``balanced[:W]``.
            A is the evaluation's, set once where the evaluation is made (the runner makes it from
            the same settings); the callback checks that a baseline it names is the task's, and,
            when the run starts, that the evaluation aggregates by it (``None``: by whatever the
            evaluation does) when the method is made.
        max_adversarial: window of adversarial instances kept (oldest dropped); nominal ones always stay.
        adversary_objective: what the inner search maximises: ``metric`` (the paper's),
            ``regret:baselines``, ``regret:NAME`` (against the task's baseline NAME alone, e.g.
            ``regret:bestfit``; the name is checked when the run starts) or
            ``regret:population[:K]``. Whatever the objective, the instance's provenance records
            ``metric``, ``reference_metric`` (the best classical baseline's, or the best
            reference's under regret) and ``regret``.
        inner_draws: instances R each candidate distribution is scored on (the task's default,
            ``raise_plugin.adversary.default_draws``, when ``None``).
        instances_per_refresh: ``one`` (the paper's: a refresh adds one instance, the winning
            distribution's representative draw) or ``draws`` (it adds all R draws, ``adv-K.R``
            each with its own provenance; with R = 1 the two are the same). The window
            ``max_adversarial`` counts instances, so a run that keeps as many refreshes needs R
            times the window.
        projection, encoding, constraint, length: the inner search's switches; ``noise`` and
            ``executor``, the search's own, are passed to it as well.

    Args:
        seed: the inner search of refresh k uses seed ``(seed, k)``, so a run is reproducible.
        searcher: the inner search, ``search(task, priority, epsilon, *, nominal, seed, inner_population,
            inner_generations, inner_draws, references, objective, **switches)``; ``raise_plugin.adversary.search``
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
    """

    def __init__(self, adversary: "AdversarySettings | float | None" = None, *, seed: int = 0,
                 searcher: Callable | None = None, search_timeout: float | None = None, inner_parallel: bool = True,
                 **settings):
        if isinstance(adversary, AdversarySettings):
            config = AdversaryConfig.checked(adversary, **settings)
        else:
            config = AdversaryConfig.of_keywords(**({"epsilon": adversary} if adversary is not None else {}),
                                                 **settings)
        self.config = config  # the callback's settings: read from it where used, never copied
        self.seed = checked_setting("seed", int(seed) if isinstance(seed, np.integer) else seed)
        if searcher is None:  # the real search: check its settings now, naming the field
            options = config.search_options(config.inner_search.inner_draws or 1)
            SearchConfig(epsilon=config.epsilon, **{k: v for k, v in options.items() if k != "executor"})
        elif not callable(searcher):  # every refresh would fail calling it
            raise AdversaryConfigError("searcher", f"must be a function with raise_plugin.adversary.search's "
                                                   f"signature (None: that one), got {searcher!r}")
        checked_setting(SEARCH_TIMEOUT, search_timeout)
        self._searcher = searcher
        self.search_timeout = search_timeout
        self.inner_parallel = bool(inner_parallel)
        self.reset()

    def reset(self) -> None:
        """No refresh made yet: a new run's refresh k draws the seed and instance id the first run's did."""
        self.skipped: list[dict] = []
        self.refreshes = 0
        self.last_refresh_generation = 0
        self.last_refresh_samples = 0
        self.history: list[dict] = []

    # the settings, read from the config (``AdversaryConfig``) under its names: a setting's name where the
    # value is the setting's, ``..._rule`` where it is the rule parsed from it
    epsilon = property(lambda self: self.config.epsilon, doc="eps: the radius of the ball around the nominal set")
    tau = property(lambda self: self.config.tau, doc="the refresh interval")
    tau_unit = property(lambda self: self.config.tau_unit, doc="what tau counts: generations or samples")
    inner_population = property(lambda self: self.config.inner_search.inner_population, doc="P_in")
    inner_generations = property(lambda self: self.config.inner_search.inner_generations, doc="G_in")
    inner_draws = property(lambda self: self.config.inner_search.inner_draws, doc="R, or None: the task's")
    aggregation_rule = property(lambda self: self.config.aggregation_rule, doc="A over the instance set, or None")
    objective_rule = property(lambda self: self.config.objective_rule, doc="what the inner search maximises")
    max_adversarial = property(lambda self: self.config.max_adversarial, doc="adversarial instances kept")
    instances_per_refresh = property(lambda self: self.config.instances_per_refresh, doc="one or draws")
    adversary_switches = property(lambda self: self.config.all_switches, doc="the inner search's switches")

    def check_task(self, task) -> None:
        """A baseline named by the objective or the aggregation must be ``task``'s, and eps within
        its reach (``AdversaryConfig.check_task``): the robust method calls this when it is made,
        so a wrong name or an eps never reached fails before the first sample."""
        self.config.check_task(task)

    def check_evaluation(self, evaluation) -> None:
        """The evaluation aggregates by this callback's aggregation, where it names one: A is the
        evaluation's, set once where it is made (the robust method calls this when it is made)."""
        rule = self.config.aggregation_rule
        applied = getattr(evaluation, "aggregation", None)
        if rule is not None and applied is not None and str(rule) != str(applied):
            raise ValueError(f"aggregation: the evaluation aggregates by {applied}, this callback's settings say "
                             f"{rule}; A is the evaluation's: make it with aggregation={str(rule)!r}")

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
        k = self.refreshes + 1
        seed = int(np.random.SeedSequence([self.seed, k]).generate_state(1)[0])
        start = time.perf_counter()
        code = method.program_text(best.program_id)
        references = self._references(method, snapshot, best)
        draws = self.inner_draws or default_draws(method.task)
        options = dict(nominal=method.nominal_instances(), seed=seed, **self.config.search_options(draws))
        if self.instances_per_refresh == "draws":
            options["all_draws"] = True
        searcher = search if self._searcher is None else self._searcher
        call = (searcher, method.task, code, references, self.epsilon, options)
        try:
            result = self._search_in_sandbox(method, call, references)
        except (SearchFailed, AdversaryReferenceError) as exc:  # no usable reference: skip, as a hang
            self._skip(method, snapshot, best, k, time.perf_counter() - start, exc)
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
            "objective": str(self.objective_rule),
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
        self.refreshes = k
        self._mark_refreshed(snapshot)
        self._add_found_instances(method, snapshot, k, result, provenance)

    def _search_in_sandbox(self, method, call: tuple, references: list):
        """The inner search ``call`` where the attacked program may run: its evaluations on the
        run's sandboxed workers, or the whole search in one worker of its own, within the time
        limit (``search_timeout``); ``SearchFailed`` when it runs out of time or its worker dies."""
        limit = self.search_timeout
        if limit is None:
            limit = float(getattr(method.evaluation, "timeout_seconds", None) or 0) * self.inner_generations
            limit *= 1 + len(references)  # the references run on every candidate too
        pool = None
        if self.adversary_switches.get("executor") is not None:
            limit = 0  # a pool made in this process does not survive a fork: its own limits apply
        elif self.inner_parallel and self._searcher is None:  # ours evaluates only through its executor
            pool = sandbox_pool(method)
        if self.objective_rule.kind == "regret" and not references:
            raise SearchFailed(f"no reference for {self.objective_rule}: the population has no other valid member")
        give_up = getattr(method, "interrupted", None)  # the run ends at once: the search is not waited for
        if pool is not None:
            return on_run_workers(search_program, call, pool, limit, give_up)
        return search_program(*call) if not limit else in_one_worker(search_program, call, limit, give_up)

    def _skip(self, method, snapshot: RunSnapshot, best: ProgramView, k: int, seconds: float,
              exc: Exception) -> None:
        """A refresh whose search failed: its time counted, the reason kept in ``skipped``, the run goes on."""
        record = getattr(method, "record_inner_search", None)
        if record is not None:
            record(0, seconds)
        self.skipped.append({"refresh": k, "generation": snapshot.generation, "program_id": best.program_id,
                             "reason": str(exc), "seconds": seconds})
        self._mark_refreshed(snapshot)
        log.warning("inner search on %s skipped at generation %d: %s", best.program_id,
                    snapshot.generation, exc)

    def _add_found_instances(self, method, snapshot: RunSnapshot, k: int, result, provenance: dict) -> None:
        """Add what refresh ``k`` found (its representative draw, or every draw) to the instance set,
        and record the refresh in ``history``."""
        arrays = {name: getattr(result, name) for name in ("distribution", "genes", "nearest")
                  if getattr(result, name, None) is not None}
        added = [(_found_name(k), result.instance, provenance)]
        if self.instances_per_refresh == "draws" and getattr(result, "all_draws", ()):
            added = [(_found_name(k, d.draw), d.instance,
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
                             "search_seconds": provenance["search_seconds"],
                             "inner_evaluations": provenance["inner_evaluations"],
                             "reference_evaluations": provenance["reference_evaluations"],
                             "rescored": len(update.rescored),
                             "evaluations": sum(u.evaluations for u in updates),
                             "rescore_seconds": sum(u.seconds for u in updates)})

    def _mark_refreshed(self, snapshot: RunSnapshot) -> None:
        """This generation's refresh is done (made, skipped or switched off): not again until tau more."""
        self.last_refresh_generation, self.last_refresh_samples = snapshot.generation, snapshot.samples

    def _references(self, method, snapshot: RunSnapshot, best: ProgramView) -> list[tuple[str, Any]]:
        """``(name, priority or program text)`` of the references: the task's baselines (under
        ``metric`` too, so every instance records its regret), or the population's next best."""
        if self.objective_rule.reference == "population":
            others = sorted((p for p in snapshot.population
                             if p.program_id != best.program_id and math.isfinite(p.score)),
                            key=lambda p: -p.score)
            chosen = list(dict.fromkeys(p.program_id for p in others))[: self.objective_rule.members]
            return [(pid, method.program_text(pid)) for pid in chosen]
        if self.objective_rule.reference == "baseline":
            return [named_baseline(method.task, self.objective_rule.name)]
        baselines = getattr(method.task, "baselines", None) or {}
        return list(baselines.items())

    def summary_fields(self) -> dict:
        """The refreshes whose inner search failed, when any (``refreshes_skipped``: refresh, generation,
        program, reason, seconds): the run trained without the instances they would have added."""
        return {"refreshes_skipped": list(self.skipped)} if self.skipped else {}

    def state_dict(self) -> dict:
        return {"refreshes": self.refreshes, "last_refresh_generation": self.last_refresh_generation,
                "last_refresh_samples": self.last_refresh_samples,
                "history": list(self.history), "skipped": list(self.skipped)}

    def state_from_records(self, log, generation: int) -> None:
        """The refreshes recorded with the instances they found by ``generation``'s end: the last one
        numbers the next (its seed and instance id) and times it; ``history`` holds what the records
        keep of each (not the re-scores' counts). A refresh that was skipped left no record."""
        made: dict[int, dict] = {}
        for record in log.instances.values():
            found = {**(record.get("provenance") or {}), "distance": record.get("distance")}
            if (record.get("origin") == "adversarial" and "refresh" in found
                    and found.get("generation", generation + 1) <= generation):
                made.setdefault(int(found["refresh"]), found)  # a refresh's first draw names it
        if not made:
            return
        kept = ("objective", "metric", "reference_metric", "regret", "distance", "search_seconds", "inner_evaluations",
                "reference_evaluations")
        self.history = [{"refresh": k, "generation": p["generation"], "instance_id": _found_name(k, p.get("draw")),
                         **{key: p.get(key) for key in kept}} for k, p in sorted(made.items())]
        last = made[max(made)]
        self.refreshes = max(made)
        self.last_refresh_generation, self.last_refresh_samples = int(last["generation"]), int(last["samples"])

    def load_state_dict(self, state: dict) -> None:
        self.refreshes = int(state.get("refreshes", 0))
        self.last_refresh_generation = int(state.get("last_refresh_generation", 0))
        self.last_refresh_samples = int(state.get("last_refresh_samples", 0))
        self.history = list(state.get("history", []))
        self.skipped = list(state.get("skipped", []))


class IdleAdversaryWarning(PluginWarning):
    """A robust run whose budget allows no refresh: its adversary never runs."""


def idle_adversary(budget: BudgetSettings, adversary: AdversarySettings, answers: int | None = None) -> str | None:
    """Why a robust run of ``budget`` can never refresh its instance set on ``adversary``'s schedule
    (``AdversarialInstanceCallback.on_generation_end``), or ``None``. A host generation is
    ``budget.pop_size`` samples; a refresh comes at the end of every ``tau``-th generation
    (``tau_unit="generations"``) or of the first generation after ``tau`` samples. ``answers``: the
    answers a replay's recording holds; the replay takes no more samples, so a budget above them
    neither counts nor is a fix."""
    pop_size, tau, in_samples = budget.pop_size, adversary.tau, adversary.tau_unit == "samples"

    def reach(samples: int) -> int:  # the highest tau that ``samples`` samples reach: whole generations
        return (samples // pop_size) * (pop_size if in_samples else 1)

    samples = budget.samples if answers is None else min(budget.samples, answers)
    if reach(samples) and reach(samples) >= tau:
        return None
    of = f" of the {answers} recorded answers it replays" if samples < budget.samples else ""
    if in_samples:
        needed = max(1, math.ceil(tau / pop_size)) * pop_size
        why = (f"budget {budget.samples} at pop_size {pop_size} ends its last generation after {reach(samples)} "
               f"samples{of}, before tau {tau} samples")
    else:
        needed = tau * pop_size
        why = (f"budget {budget.samples} at pop_size {pop_size} makes {reach(samples)} host generations{of}, fewer "
               f"than tau {tau}")
    fixes = [f"raise budget to {needed}"] if answers is None or needed <= answers else []
    if reach(samples):
        fixes.append(f"lower tau to {reach(samples)}")
    elif not fixes and reach(answers):  # a budget short of a generation, in a replay that holds one
        fixes.append(f"raise budget to {answers} and lower tau to {reach(answers)}")
    fix = " or ".join(fixes)
    if not (answers is None or needed <= answers):
        bound = f"a replay takes no more samples than the {answers} answers its recording holds"
        fix = f"{bound}: {fix}" if fix else f"{bound}, too few for a refresh at any tau"
    return f"{why}: the adversary never runs and this robust run is a plain one; {fix}"


def _found_name(refresh: int, draw: int | None = None) -> str:
    """The name of what refresh ``refresh`` found (its ``draw``-th draw where it adds every draw)."""
    return f"adv-{refresh}" if draw is None else f"adv-{refresh}.{draw}"


def _float_or_none(x):
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)
