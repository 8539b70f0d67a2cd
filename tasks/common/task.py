"""The task protocol: what every task (OBP, OJSP, OVRP) offers to the plugin."""
from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, Callable

import numpy as np

import tasks

from . import behaviour
from .evaluation import TaskEvaluation
from .families import VALIDATION_FAMILIES, sample_family
from .layout import TableLayout
from .shift import ShiftDimension
from .suite import Dataset, seed_for

__all__ = ["Task"]

Instance = dict[str, Any]


class Task(ABC):
    """A heuristic-design task with one shift dimension.

    Subclasses set ``name``, ``shift``, ``template_program``, ``task_description``,
    ``baselines`` (name -> priority function) and ``nominal_params`` (the keyword
    arguments ``make_instance`` needs besides the shifted values), and implement the
    abstract methods. Metrics are lower-is-better; the host score is ``-metric``.

    Optional: ``metric_name`` and ``metric_unit`` (what every table and report calls the metric:
    ``metric_label``), ``table_layouts()`` (the paper tables),
    ``offline_library`` (what the offline program sampler may build programs from: a
    mapping read by ``raise_plugin.llm.offline_library``; without one the sampler takes
    its generic path).
    """

    name: str
    shift: ShiftDimension
    template_program: str
    task_description: str
    baselines: dict[str, Callable]
    nominal_params: dict[str, Any]
    timeout_seconds: float = 60.0       # one evaluation on the whole nominal set (the host's limit)
    # robust settings a run takes when none is given (eps, aggregation, adversary_objective,
    # projection), chosen on the task's validation suite; the paper's where empty
    robust_defaults: dict[str, Any] = {}
    # the program a finished run hands on: "robust" (its robust best, the paper's) or
    # "validation" (the member of its last population best on the validation suite), chosen
    # for the task on its validation suite alone (docs/validation.md, benchmarks/final_selection.py)
    final_selection: str = "robust"
    instance_timeout_floor: float = 10.0  # no instance gets less, however small
    # instances R the inner search draws from each candidate distribution when the run does not
    # say (``raise_plugin.adversary.default_draws``): one, unless the task measured a better R
    default_draws: int = 1
    # what the metric is, in words ("waste ratio"), and its unit ("%", "ratio to the lower bound";
    # empty for a plain number): every table and report names them (``metric_label``)
    metric_name: str = "metric"
    metric_unit: str = ""
    offline_library: dict[str, Any] | None = None

    # -- instances -------------------------------------------------------------
    @abstractmethod
    def make_nominal(self) -> list[Instance]:
        """Generate the nominal training set (fixed seeds); ``nominal_instances`` caches it. A task
        that can draw it afresh takes a keyword ``seed`` (an int; ``None``: the fixed seeds)."""

    @cached_property
    def _nominal(self) -> list[Instance]:
        return list(self.make_nominal())

    def nominal_instances(self, seed: int | None = None) -> list[Instance]:
        """The nominal training set (a new list of the same cached instances); with ``seed``, one
        drawn the same way from that seed instead of the public fixed seeds (what a run trains on,
        so that no program can rebuild its instances from the task's generator), where the task
        can draw one (``draws_nominal``); else the public one."""
        if seed is None or not self.draws_nominal:
            return list(self._nominal)
        return list(self.make_nominal(seed=int(seed)))

    @property
    def draws_nominal(self) -> bool:
        """Whether ``make_nominal`` takes a ``seed`` (a nominal set drawn from a run's own seed)."""
        try:
            return "seed" in inspect.signature(self.make_nominal).parameters
        except (TypeError, ValueError):
            return False

    @abstractmethod
    def test_suite(self) -> list[Dataset]:
        """The shifted test suite (fixed seeds): for the final report only, never for a choice."""

    def validation_suite(self, per_dataset: int | None = None) -> list[Dataset]:
        """The validation suite: families (``VALIDATION_FAMILIES``), sizes and seeds disjoint
        from the test suite's, on which every choice (settings, defaults, a final selection)
        is made. This default draws the shift values of each validation family at the
        nominal length and builds the rest with ``make_instance``; tasks with sizes to vary
        override it."""
        nominal = self.nominal_instances()[0]
        values, high = self.shift_values(nominal)
        size = int(np.asarray(values).size)
        out = []
        for family in VALIDATION_FAMILIES:
            instances = []
            for i in range(per_dataset or 2):
                rng = seed_for(self.name, "validation", family, i)
                instances.append(self.make_instance(sample_family(family, size, int(high), rng), rng,
                                                    **self.nominal_params))
            out.append(Dataset(family, {}, instances))
        return out

    def family_instance(self, family: str, rng: np.random.Generator, **params) -> Instance:
        """One instance whose shift values follow the named family (``tasks.common.families``), at
        the nominal sizes (``params`` override them; ``length`` the number of shifted values).
        Tasks whose generator draws families itself override it."""
        values, high = self.shift_values(self.nominal_instances()[0])
        size = int(params.pop("length", np.asarray(values).size))
        return self.make_instance(sample_family(family, size, int(high), rng), rng, **{**self.nominal_params, **params})

    def suite(self, name: str) -> list[Dataset]:
        """A suite by name: ``nominal`` (one dataset of the training set), ``validation`` or ``test``."""
        if name == "nominal":
            return [Dataset("nominal", {}, self.nominal_instances())]
        if name == "validation":
            return self.validation_suite()
        if name == "test":
            return self.test_suite()
        raise ValueError(f"unknown suite {name!r}; use nominal, validation or test")

    @abstractmethod
    def shift_values(self, instance: Instance) -> tuple[np.ndarray, int]:
        """The instance's values along the shift dimension and their maximum ``high``."""

    @abstractmethod
    def instance_length(self, instance: Instance) -> int:
        """How many values the instance draws along the shift dimension."""

    @abstractmethod
    def make_instance(self, values: np.ndarray, rng: np.random.Generator, **params) -> Instance:
        """Build an instance around the given shifted values (the rest drawn from ``rng``)."""

    @property
    def nominal_length(self) -> int:
        return self.instance_length(self.nominal_instances()[0])

    @property
    def length_can_change(self) -> bool:
        """Whether the adversary's length gene may change the instance length."""
        return True

    @cached_property
    def nominal_spread(self) -> float:
        """Mean distance d between two nominal histograms (mean absolute difference over the K
        cells): how far apart the training instances already are, the yardstick of eps."""
        histograms = [self.histogram(s) for s in self.nominal_instances()]
        pairs = [float(np.abs(a - b).mean()) for i, a in enumerate(histograms) for b in histograms[i + 1:]]
        return float(np.mean(pairs)) if pairs else 0.0

    def check_behaviour(self) -> None:
        """What a declared task's code gives, tried once when it is loaded by reference
        (``tasks.common.behaviour.check_behaviour``): a ``ValueError`` naming the part at fault and what it
        gave or raised, so that no command starts on code that cannot work."""
        behaviour.check_behaviour(self)

    @property
    def nominal_high(self) -> int:
        return self.shift_values(self.nominal_instances()[0])[1]

    def histogram(self, instance: Instance) -> np.ndarray:
        """The instance's empirical distribution over the K cells of the shift dimension."""
        values, high = self.shift_values(instance)
        return self.shift.histogram(values, high)

    def sample_instance(self, p: np.ndarray, rng: np.random.Generator, length: int | None = None,
                        **params) -> Instance:
        """An instance whose shifted values are drawn from ``p`` (nominal sizes by default)."""
        kwargs = {**self.nominal_params, **params}
        high = self.high_of(kwargs)
        n = self.nominal_length if length is None else int(length)
        if n < 1:
            raise ValueError(f"instance length must be >= 1, got {n}")
        values = self.shift.sample(p, n, rng, high)
        return self.make_instance(values, rng, **kwargs)

    def high_of(self, params: dict[str, Any]) -> int:
        """The maximum of the shift dimension for instances built with ``params``."""
        return int(params.get("high", self.shift_values(self.nominal_instances()[0])[1]))

    # -- reporting -------------------------------------------------------------
    @property
    def metric_label(self) -> str:
        """The metric as a table's caption names it: name, unit and direction, e.g. ``"waste ratio
        (%), lower is better"`` (every metric is lower-is-better: the protocol's)."""
        unit = f" ({self.metric_unit})" if self.metric_unit else ""
        return f"{self.metric_name}{unit}, lower is better"

    def table_layouts(self) -> tuple[TableLayout, ...]:
        """The task's own paper tables (the harness adds the per-distribution and ablation
        tables every task gets). By default one table per size of the test suite, averaged
        over the families."""
        unit = f" ({self.metric_unit})" if self.metric_unit else ""
        return (TableLayout("table_per_size", f"{self.name}: {self.metric_name}{unit} per size, averaged over the "
                                              "distributions", by="size", average=False),)

    # -- evaluation ------------------------------------------------------------
    @abstractmethod
    def evaluate(self, priority: Callable, instance: Instance) -> float:
        """The metric (lower is better) of ``priority`` on ``instance``.

        Raises ``HeuristicError`` with a one-line reason when the heuristic fails.
        """

    def decision_bound(self, instance: Instance) -> int:
        """The most decisions a heuristic can take on ``instance`` (what the judge reads of a
        program's answer at most); generous by default."""
        return 1 << 24

    def future_replaced(self, instance: Instance, rng: np.random.Generator) -> Instance | None:
        """A copy of ``instance`` whose part still to come after a random point is replaced (the
        judge's check that a program does not look ahead: before that point an online program
        decides as it did on ``instance``); ``None`` where the task offers no such check."""
        return None

    # the simulator reads each part of the instance from the instance's own arrays when it needs
    # it (an item as it arrives), so a staged check's revealed part is written into its run in
    # progress; otherwise each reveal starts the copy's run again, its decisions so far replayed
    stages_in_place = False

    def future_stages(self, instance: Instance, rng: np.random.Generator, decisions: np.ndarray):
        """The judge's staged look-ahead check, where the task offers one (else ``None``, and the
        check replaces the future after one point, ``future_replaced``). ``decisions`` are a
        program's on ``instance``, all of them (they tell which part of the instance each
        decision knows). Returns ``(start, stages, horizon)``: ``start`` a copy of ``instance``
        whose part after the first stage's end is replaced, ``stages`` a list of ``(decisions,
        patch)`` in increasing order: once ``decisions`` decisions are made (and before the next
        is asked), ``patch``, ``{key: (index, values)}``, writes ``values`` into
        ``start[key][index]`` (``index`` an int: the rows from it on; else an array of row
        indices), revealing the part of ``instance`` the decisions up to the next stage's end
        know; and ``horizon``, the most decisions the copy can share with ``instance`` (the
        check stops there). Until a part is revealed the copy's replacement must leave every
        decision's arguments as they are on ``instance``. The candidates are the heuristic's
        last argument. With ``stages_in_place`` the simulator must read those arrays as it goes;
        without, a reveal starts the run again (``tasks.common.reveal`` plans such stages)."""
        return None

    def instance_work(self, instance: Instance) -> float:
        """How much work evaluating a heuristic on ``instance`` takes, in the task's own unit
        (heuristic calls times candidates per call); only ratios between instances matter."""
        return float(self.instance_length(instance))

    def instance_timeout(self, instance: Instance) -> float:
        """The default wall-clock limit, in seconds, for one heuristic on ``instance``.

        The nominal set's limit (``timeout_seconds``) shared equally among its instances,
        scaled by the instance's work relative to a nominal instance, and never below
        ``instance_timeout_floor``. A constant of the task, not a measurement, so the same
        heuristic gets the same limit on a busy machine as on an idle one.
        """
        nominal = self.nominal_instances()
        share = self.timeout_seconds / len(nominal)
        ratio = self.instance_work(instance) / self.instance_work(nominal[0])
        return max(float(self.instance_timeout_floor), share * ratio)

    def evaluation(self, instances: list[Instance] | None = None, **kwargs):
        """The host ``Evaluation`` over ``instances`` (the nominal set by default)."""
        return TaskEvaluation(self, instances, **kwargs)

    def __reduce__(self):
        # Tasks are stateless apart from caches: pickle by name (or the file or module reference
        # they were loaded from) so worker processes rebuild them. The registry is the package
        # itself, always loaded before this module, so its names are read when a task is pickled.
        return (tasks.get_task, (tasks.reference_of(self),))

    def __repr__(self) -> str:
        return f"<Task {self.name}>"

