"""Declare your own task through the adapter, then design a robust heuristic for it offline.

The host's one-dimensional bin packing (``llm4ad.task.optimization.bp_1d_construct``)
becomes a RAISE task by declaring its shift dimension (the item weight), how to read and
build instances along it, its nominal set (the host's generator), baselines and sizes;
the test and validation suites, the adversary, the offline program sampler (its generic
path: this task declares no offline library) and ``robust()`` then serve it.

    python examples/robust_your_task.py      # about half a minute on two cores; no LLM, no network
"""
import numpy as np
from llm4ad.method.eoh import EoH
from llm4ad.task.optimization.bp_1d_construct import template as host
from llm4ad.task.optimization.bp_1d_construct.evaluation import BP1DEvaluation

from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.llm import make_llm
from raise_plugin.programs import compile_priority
from raise_plugin.robust import robust
from tasks import register_task
from tasks.common import HeuristicError, ShiftDimension
from tasks.common.adapter import HostTask

CAPACITY, MAX_WEIGHT = 100, 50  # the host draws weights 50 - 40 Beta(2, 5), truncated: in [10, 50]


def first_fit(remaining_items, remaining_capacities):
    """The host's template: the first item, into the first bin it fits."""
    return remaining_items[0], next(b for b, c in enumerate(remaining_capacities) if remaining_items[0] <= c)


def first_fit_decreasing(remaining_items, remaining_capacities):
    """The largest item first, into the first bin it fits."""
    item = max(remaining_items)
    return item, next(b for b, c in enumerate(remaining_capacities) if item <= c)


class BinPacking(HostTask):
    """Pack n items into bins of capacity 100; metric: bins above the lower bound, in percent."""

    name = "bp1d"
    shift = ShiftDimension("item weight", cells=MAX_WEIGHT)
    template_program = host.template_program.replace(
        "import numpy as np", "import numpy as np\nfrom typing import List, Optional, Tuple", 1)
    task_description = host.task_description
    baselines = {"FirstFit": first_fit, "FirstFitDecreasing": first_fit_decreasing}
    nominal_params = {}
    test_sizes = ({"n": 60}, {"n": 120})
    validation_sizes = ({"n": 90},)

    def make_nominal(self):
        rs = np.random.RandomState(2024)  # the host's generator and seed, 3 instances of 60 items
        return [self.make_instance((50 - rs.beta(2, 5, size=60) * 40).astype(int), rs) for _ in range(3)]

    def shift_values(self, instance):
        return instance["weights"], MAX_WEIGHT

    def make_instance(self, values, rng, **sizes):
        return {"weights": np.asarray(values, dtype=np.int64)}

    def evaluate(self, heuristic, instance):
        weights = instance["weights"].tolist()
        try:  # the host's own packing loop, with as many bins as items
            packed = BP1DEvaluation.pack_items(None, weights, CAPACITY, heuristic, len(weights))
        except Exception as exc:
            raise HeuristicError(f"determine_next_assignment: {type(exc).__name__}: {exc}") from None
        if packed is None:
            raise HeuristicError("an item was left out or a bin overfilled")
        lower = -(-sum(weights) // CAPACITY)
        return 100.0 * (packed[0] - lower) / lower


if __name__ == "__main__":
    task = register_task(BinPacking)  # by name, so evaluation workers find it
    method = robust(EoH, callbacks=[AdversarialInstanceCallback(epsilon=0.002, tau=2)])(
        llm=make_llm("offline", seed=0, task=task.name), evaluation=task.evaluation(),
        max_sample_nums=30, pop_size=4, max_generations=None, seed=0)
    method.run()

    summary = method.summary(finished=True)
    print(f"{summary['samples']} samples, {summary['generations']} generations, {summary['refreshes']} refreshes")
    best = compile_priority(summary["best"]["program"], None)
    for suite in ("nominal", "validation"):  # choices are made on validation; the test suite is for the report
        instances = [s for d in task.suite(suite) for s in d.instances]
        means = {name: np.mean([task.evaluate(h, s) for s in instances])
                 for name, h in {**task.baselines, "robust EoH": best}.items()}
        print(f"{suite:10s} " + ", ".join(f"{name} {m:.2f} %" for name, m in means.items()))
