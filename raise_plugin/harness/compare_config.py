"""What ``raise-ahd compare`` runs: ``CompareConfig``, checked on creation with one-line errors naming the field."""
from __future__ import annotations

from dataclasses import dataclass

from raise_plugin.config import ConfigError, RunConfig, final_selection, robust_defaults
from raise_plugin.engine.executor_spec import parse_executor_spec
from raise_plugin.errors import UserError
from raise_plugin.llm import make_llm
from raise_plugin.methods import METHODS
from raise_plugin.selection import check_selection_suite
from tasks import is_task_reference, list_tasks, task_reference

__all__ = ["CompareConfig"]


@dataclass
class CompareConfig:
    """What ``raise-ahd compare`` runs; validated on creation (one-line errors naming the field)."""

    task: str = "obp"
    methods: tuple = ("eoh",)
    epsilons: tuple | None = None        # default: the task's eps (``Task.robust_defaults``), else 0.002
    ablations: bool = False
    budget: int = 1000
    pop_size: int = 10
    seeds: tuple = (0, 1, 2, 3, 4)
    llm: str = "offline"
    out: str = "compare-out"
    tau: int = 5
    inner_population: int = 8
    inner_generations: int = 4
    nominal: int | None = None
    suite_instances: int | None = None   # at most this many instances per test dataset (all by default)
    workers: int | None = None           # evaluation workers of each job (default: its share of the cores)
    executor: str | None = None          # where jobs run: process (default), serial, dask://HOST:PORT, dask://local[:N]
    jobs: int | None = None              # jobs at once in local processes (default: ``default_jobs()``)
    ship_runs: bool | None = None        # ship run directories back as archives (default: when a worker cannot see OUT)
    aggregation: str | None = None       # these three: the task's robust defaults, else the paper's
    adversary_objective: str | None = None
    inner_draws: int | None = None
    projection: str | None = None
    select_on: str | None = None         # each run's final program: robust (its robust best) or validation
    #                                      (chosen on the validation suite); default: the task's

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
        self.epsilons = tuple(float(e) for e in self.epsilons)
        if any(not e > 0 for e in self.epsilons):
            raise UserError("epsilons: every radius must be positive")
        if self.ablations and not self.epsilons:
            raise UserError("ablations: need at least one robust eps")
        for name in ("budget", "pop_size", "tau", "inner_population", "inner_generations"):
            if int(getattr(self, name)) < 1:
                raise UserError(f"{name}: must be at least 1")
        if self.pop_size < 2:
            raise UserError("pop_size: must be at least 2")
        self.seeds = tuple(int(s) for s in self.seeds)
        if not self.seeds:
            raise UserError("seeds: give at least one seed")
        if self.suite_instances is not None and self.suite_instances < 1:
            raise UserError("suite_instances: must be at least 1")
        try:  # the run settings compare passes on, checked by the run config itself
            RunConfig(task=self.task, aggregation=self.aggregation, adversary_objective=self.adversary_objective,
                      inner_draws=self.inner_draws, projection=self.projection)
        except ConfigError as exc:
            raise UserError(str(exc).replace("config field ", "")) from None
        if self.executor is not None:
            parse_executor_spec(self.executor)  # a bad spec fails here, before any training
        if self.workers is not None and int(self.workers) < 1:
            raise UserError("workers: must be at least 1")
        if self.jobs is not None and int(self.jobs) < 1:
            raise UserError("jobs: must be at least 1")
        _check_llm(self.llm, self.task)  # a bad back-end fails here, not in every job


def _check_llm(spec: str, task: str) -> None:
    """Build the back-end once (offline, a key in the environment, a readable recording)."""
    kind = str(spec).split(":", 1)[0].lower()
    make_llm(spec, **({"task": task} if kind == "offline" else {}))
