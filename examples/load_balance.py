"""Online load balancing, a RAISE task in one file (the walkthrough of docs/tasks.md).

Jobs arrive one at a time and each goes, at once and for good, to one of m machines;
the heuristic scores the machines for the arriving job. The metric is the makespan
above its lower bound, in percent. The job size is what shifts.

    raise-ahd run --task examples/load_balance.py:LoadBalance --robust --budget 30 --pop-size 4
"""
import numpy as np

from raise_plugin import HostTask, ShiftDimension, decide

MAX_SIZE = 100  # job sizes are integers in [1, 100]


def least_loaded(job, loads):
    """Greedy list scheduling (Graham): the machine with the least load."""
    return -loads


def fullest_that_fits(job, loads):
    """The fullest machine the job fits on without raising the makespan, else the least loaded."""
    return np.where(loads + job <= loads.max(), loads, -loads - MAX_SIZE * len(loads))


class LoadBalance(HostTask):
    """n jobs onto m machines, online; metric: makespan above max(mean load, largest job), in percent."""

    name = "load_balance"
    metric_name = "makespan above the lower bound"
    metric_unit = "%"
    shift = ShiftDimension("job size", cells=20)  # K = 20 cells of 5 sizes each
    task_description = ("Jobs arrive one at a time and each must be assigned at once to one of m machines. "
                        "Design a priority function scoring the machines for the arriving job; the job goes "
                        "to the machine of highest score. The aim is a small makespan (the largest load).")
    template_program = '''
import numpy as np

def priority(job: int, loads: np.ndarray) -> np.ndarray:
    """Scores of the machines for the arriving job (the job goes to the highest).
    job: the job's size; loads: every machine's current load (one float per machine)."""
    slack = loads.max() - loads - job  # room left under the makespan once the job is on
    return np.where(slack >= 0, -slack, -loads - 1000.0)
'''
    baselines = {"LeastLoaded": least_loaded, "FullestThatFits": fullest_that_fits}
    nominal_params = {"m": 10}
    test_sizes = ({"n": 100, "m": 5}, {"n": 200, "m": 10})
    validation_sizes = ({"n": 150, "m": 8},)
    per_dataset = 3

    def make_nominal(self):
        """Five instances of 200 jobs, sizes uniform in [20, 60], from fixed seeds."""
        rngs = [np.random.default_rng([2024, i]) for i in range(5)]
        return [self.make_instance(rng.integers(20, 61, size=200), rng) for rng in rngs]

    def shift_values(self, instance):
        return instance["jobs"], MAX_SIZE

    def make_instance(self, values, rng, m=10, **_):
        return {"jobs": np.asarray(values, dtype=np.int64), "machines": int(m)}

    def evaluate(self, priority, instance):
        jobs, loads = instance["jobs"], np.zeros(instance["machines"])
        for job in jobs.tolist():
            loads[decide(priority, job, loads.copy(), len(loads))] += job
        bound = max(jobs.sum() / len(loads), jobs.max())
        return 100.0 * (loads.max() / bound - 1.0)
