"""Online job shop scheduling (SPEC 3.2): non-delay dispatching with a shiftable operation-duration distribution."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tasks.common.decision import Replay
from tasks.common.errors import HeuristicError
from tasks.common.layout import TableLayout
from tasks.common.reveal import unit_patches, unit_stages
from tasks.common.shift import ShiftDimension
from tasks.common.task import Task

from . import instances as _inst
from .baselines import BASELINES, CLASSICAL_RULES
from .feasibility import check_schedule, schedule_problems
from .offline import LIBRARY
from .simulator import COLUMNS, normalised_makespan, simulate
from .template import task_description, template_program

__all__ = ["OJSPTask", "COLUMNS", "simulate", "normalised_makespan", "check_schedule", "schedule_problems"]


class OJSPTask(Task):
    """J jobs on M machines arrive online; metric: normalised makespan C_max / LB (lower is better).

    The shift dimension is the operation duration (1..99, one cell per value); the
    instance length is the job count J, so ``sample_instance(p, rng, length=J)`` builds
    J jobs of M operations with durations drawn from ``p``.
    """

    name = "ojsp"
    shift = ShiftDimension("operation duration", cells=_inst.MAX_DURATION)
    template_program = template_program
    task_description = task_description
    baselines = dict(BASELINES)
    classical_rules = dict(CLASSICAL_RULES)  # every classical rule: the tables' rows, the best-classical candidates
    offline_library = LIBRARY
    nominal_params = {"M": _inst.NOMINAL_MACHINES}
    timeout_seconds = 60.0
    # R, from the re-sampling check of benchmarks/adversary_strength.py (docs/adversary.md): fresh
    # draws keep about a quarter of the harm found at R = 1, more than half from R = 8
    default_draws = 8
    metric_name = "normalised makespan"
    metric_unit = "C_max / lower bound"

    def table_layouts(self):
        return (TableLayout("table3_ojsp", "Table 3 (OJSP): normalised makespan per machine count (mean over "
                                           "distributions and job counts)", by="size", keys=("M",),
                            label="{}-machine", average=False),)

    def make_nominal(self, seed: int | None = None) -> list[dict]:
        return _inst.nominal_instances(seed=seed)

    def test_suite(self):
        return _inst.test_suite()

    def validation_suite(self, per_dataset: int | None = None):
        return _inst.validation_suite(per_dataset=per_dataset or _inst.VALIDATION_PER_DATASET)

    def family_instance(self, family, rng, **params):
        return _inst.family_instance(family, int(params.get("num_jobs", _inst.NOMINAL_JOBS)),
                                     int(params.get("num_machines", _inst.NOMINAL_MACHINES)), rng)

    def shift_values(self, instance: dict):
        return np.asarray(instance["durations"]).ravel(), _inst.MAX_DURATION

    def instance_length(self, instance: dict) -> int:
        return int(instance["num_jobs"])

    @property
    def nominal_length(self) -> int:
        return _inst.NOMINAL_JOBS

    def instance_work(self, instance: dict) -> float:
        # one decision per operation (J * M), each among at most J candidates
        return float(instance["num_jobs"]) ** 2 * float(instance["num_machines"])

    def high_of(self, params) -> int:
        return _inst.MAX_DURATION

    def make_instance(self, values, rng, M: int = _inst.NOMINAL_MACHINES,
                      release_window: float = _inst.RELEASE_WINDOW, **_):
        return _inst.make_instance(values, rng, M=M, release_window=release_window)

    def sample_instance(self, p: np.ndarray, rng: np.random.Generator, length: int | None = None,
                        **params) -> dict:
        """``length`` jobs (default ``params["J"]``, else the nominal 20), J * M durations drawn from ``p``."""
        kwargs = {**self.nominal_params, **params}
        jobs = int(kwargs.pop("J", self.nominal_length) if length is None else length)
        kwargs.pop("J", None)
        if jobs < 1:
            raise ValueError(f"instance length (job count) must be >= 1, got {jobs}")
        values = self.shift.sample(p, jobs * int(kwargs["M"]), rng, _inst.MAX_DURATION)
        return self.make_instance(values, rng, **kwargs)

    def decision_bound(self, instance: dict) -> int:
        """One decision per operation."""
        return int(np.asarray(instance["durations"]).size)

    def future_replaced(self, instance: dict, rng):
        """The jobs released after a random job's release take the operations (machine order and
        durations) of jobs drawn at random; due dates and release times stay."""
        release = np.asarray(instance["release"])
        later = np.flatnonzero(release > release[int(rng.integers(release.size))])
        if later.size == 0:
            return None
        drawn = rng.integers(0, release.size, size=later.size)
        durations, machines = np.array(instance["durations"]), np.array(instance["machines"])
        durations[later], machines[later] = durations[drawn], machines[drawn]
        return {**instance, "durations": durations, "machines": machines}

    def future_stages(self, instance: dict, rng, decisions):
        """The jobs in release order: a decision at time t knows the jobs released by t. A stage
        ends before every decision that knows a job more (``unit_stages``), up to the last
        decision. The jobs not yet revealed take the operations (machine order and durations) of
        jobs drawn at random, a release time drawn between their own and the last release (never
        earlier: they stay unseen until revealed) and the drawn job's slack to its due date."""
        release = np.asarray(instance["release"], dtype=np.int64)
        try:
            _, start = simulate(instance, Replay(decisions), return_schedule=True)
        except HeuristicError:  # not a whole run's decisions
            return None
        times = np.sort(start, axis=None)  # decision k starts its operation at the k-th time
        jobs = np.argsort(release, kind="stable")
        plan = unit_stages(np.searchsorted(release[jobs], times, side="right"), rng)
        if plan is None:
            return None
        ends, revealed = plan
        copy = {key: np.array(instance[key]) for key in ("durations", "machines", "release", "due")}
        hidden = jobs[revealed[0]:]
        drawn = rng.integers(0, release.size, size=hidden.size)
        copy["durations"][hidden] = copy["durations"][drawn]
        copy["machines"][hidden] = copy["machines"][drawn]
        copy["release"][hidden] = rng.integers(release[hidden], release.max() + 1)
        copy["due"][hidden] = copy["release"][hidden] + (np.asarray(instance["due"])[drawn] - release[drawn])
        return {**instance, **copy}, unit_patches(instance, copy, jobs, ends, revealed), int(times.size)

    def evaluate(self, priority: Callable, instance: dict) -> float:
        return normalised_makespan(simulate(instance, priority), instance)
