"""What ``raise-ahd compare`` runs: ``CompareConfig``, checked on creation with one-line errors naming the field."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from raise_plugin.config import SANDBOX_LIMITS, ConfigError, RunConfig
from raise_plugin.engine.executors import parse_executor_spec
from raise_plugin.errors import UserError
from raise_plugin.llm import make_llm
from raise_plugin.methods import METHODS
from raise_plugin.resolve import final_selection, resolve, robust_defaults
from raise_plugin.selection import check_selection_suite
from raise_plugin.settings import SETTINGS, SettingError, check_settings, default
from tasks import is_task_reference, list_tasks, task_reference

__all__ = ["CompareConfig", "RUN_CONTROLS", "STUDY_CAPS"]

# what every run of a compare is given as it is: the sandbox's limits and the endpoint's controls
RUN_CONTROLS = ("timeout", "memory_mb", "file_mb", "output_mb", "base_url", "max_tokens", "llm_timeout",
                "max_failed_requests", "prices", "instance_seed", "allow_no_refresh")
# caps over the whole study: each run is given what is left of them when it starts (harness.study_budget)
STUDY_CAPS = ("max_cost_usd", "max_llm_calls")


@dataclass
class CompareConfig:
    """What ``raise-ahd compare`` runs; validated on creation (one-line errors naming the field).
    Each field is the setting of the same name in the tree (``raise_plugin.settings``), with its
    default; ``seeds`` are the seeds themselves, ``epsilons`` the robust runs' radii. The run's
    controls (``RUN_CONTROLS``: sandbox limits, endpoint, tokens, timeouts, prices) pass to every run
    as they are; the caps (``STUDY_CAPS``) hold for the whole study, the sum over its runs."""

    task: str = default("task")
    methods: tuple = default("methods")
    epsilons: tuple | None = default("epsilons")
    ablations: bool = default("ablations")
    budget: int = default("budget")
    pop_size: int = default("pop_size")
    seeds: tuple = tuple(range(default("seeds")))
    llm: str = default("llm")
    out: str = "compare-out"
    tau: int = default("tau")
    inner_population: int = default("inner_population")
    inner_generations: int = default("inner_generations")
    nominal: int | None = default("nominal")
    suite_instances: int | None = default("suite_instances")
    workers: int | None = default("workers")
    executor: str | None = default("executor")
    jobs: int | None = default("jobs")
    ship_runs: bool | None = default("ship_runs")
    aggregation: str | None = default("aggregation")
    adversary_objective: str | None = default("adversary_objective")
    inner_draws: int | None = default("inner_draws")
    projection: str | None = default("projection")
    select_on: str | None = default("select_on")
    timeout: float | None = default("timeout")
    memory_mb: int = default("memory_mb")
    file_mb: int = default("file_mb")
    output_mb: float = default("output_mb")
    base_url: str | None = default("base_url")
    max_tokens: int | None = default("max_tokens")
    llm_timeout: float | None = default("llm_timeout")
    max_failed_requests: int = default("max_failed_requests")
    prices: dict | None = default("prices")
    allow_no_refresh: bool = default("allow_no_refresh")  # RAISE runs that end before their first refresh
    instance_seed: str = default("instance_seed")  # each run's nominal set: private to the task and its seed
    max_cost_usd: float | None = default("max_cost_usd")  # over the whole study: the sum of its runs
    max_llm_calls: int | None = default("max_llm_calls")  # likewise

    def __post_init__(self):
        if self.task not in list_tasks():  # a file or module reference loads here, or fails in one line
            raise UserError(f"task: unknown {self.task!r}; choose from {', '.join(list_tasks())}")
        if is_task_reference(self.task):  # the file's absolute path: jobs and re-runs find it from anywhere
            self.task = task_reference(self.task)
        self.methods = tuple(self.methods)
        for m in self.methods:
            if m not in METHODS:
                raise UserError(f"methods: unknown {m!r}; choose from {', '.join(sorted(METHODS))}")
        if not self.methods:
            raise UserError("methods: give at least one method")
        if self.select_on is None:
            self.select_on = final_selection(self.task)
        try:
            check_selection_suite(self.select_on, ("robust", "validation"))
        except UserError as exc:
            raise UserError(f"select_on: {exc}") from None
        defaults = robust_defaults(self.task)
        if self.epsilons is None:
            self.epsilons = (defaults["epsilon"],)
        for name in ("aggregation", "adversary_objective", "projection"):
            if getattr(self, name) is None:
                setattr(self, name, defaults[name])
        self.epsilons = tuple(self.epsilons)
        self.seeds = tuple(self.seeds)
        if not self.seeds:
            raise UserError("seeds: give at least one seed")
        if self.ablations and not self.epsilons:
            raise UserError("ablations: need at least one robust eps")
        try:
            check_settings({name: getattr(self, name) for name in (
                "epsilons", "budget", "pop_size", "tau", "inner_population", "inner_generations", "nominal",
                "suite_instances", "workers", "jobs", "ship_runs", "ablations", "max_cost_usd", "max_llm_calls")})
        except SettingError as exc:
            raise UserError(str(exc)) from None
        self.epsilons = tuple(float(e) for e in self.epsilons)
        for seed in self.seeds:
            try:
                SETTINGS["seed"].check(seed)
            except SettingError as exc:
                raise UserError(f"seeds: {exc.reason}") from None
        try:  # the first run as compare builds them: the run's own checks (values, then names) hold what it passes on
            robust = bool(self.epsilons)  # no radius: plain runs only
            resolve(RunConfig(**dict(self.run_fields(self.methods[0], robust, self.epsilons[0] if robust else None,
                                                     self.seeds[0]))))
        except ConfigError as exc:
            raise UserError(str(exc).replace("config field ", "")) from None
        if self.executor is not None:
            parse_executor_spec(self.executor)  # a bad spec fails here, before any training
        _check_llm(self.llm, self.task, self.prices, self.max_cost_usd)  # a bad back-end fails here, not in every job

    def run_fields(self, method: str, robust: bool, epsilon: float | None, seed: int,
                   switches: Mapping[str, Any] = MappingProxyType({})) -> tuple:
        """The ``RunConfig`` fields of one run of the compare, but its run directory and evaluation
        executor, as sorted (field, value) pairs."""
        run = dict(task=self.task, method=method, robust=robust, epsilon=epsilon if robust else None, tau=self.tau,
                   inner_population=self.inner_population, inner_generations=self.inner_generations,
                   budget=self.budget, pop_size=self.pop_size, llm=self.llm, seed=seed, nominal=self.nominal,
                   aggregation=self.aggregation, adversary_objective=self.adversary_objective,
                   inner_draws=self.inner_draws, projection=self.projection,
                   **{name: getattr(self, name) for name in RUN_CONTROLS})
        run.update(switches)  # an ablation's switches (its projection among them) win
        return tuple(sorted(run.items()))


    def evaluation_limits(self) -> dict:
        """The sandbox every suite evaluation of the compare runs in, as its runs had it: the seconds
        per instance (``None``: the task's) and the limits apart from the engine's own (``EvalJob``)."""
        return {"timeout": self.timeout, "limits": tuple((name, getattr(self, name)) for name in SANDBOX_LIMITS
                                                         if getattr(self, name) != default(name))}


def _check_llm(spec: str, task: str, prices: dict | None = None, max_cost_usd: float | None = None) -> None:
    """Build the back-end once (offline, a key in the environment, a readable recording); a cost
    cap needs a price for its model."""
    kind = str(spec).split(":", 1)[0].lower()
    llm = make_llm(spec, **({"task": task} if kind == "offline" else {}),
                   **({"prices": prices} if prices and kind == "openai" else {}))
    backend = getattr(llm, "inner", llm)
    if max_cost_usd is not None and getattr(backend, "priced", True) is False:
        raise UserError(f"max_cost_usd: model {backend.model!r} has no known price, so the study's cost cannot be "
                        f"capped; give one with --price {backend.model}=IN,OUT (dollars per million tokens)")
