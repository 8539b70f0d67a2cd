"""The look-ahead check where each reveal starts the copy's run again (OJSP, OVRP): the decisions
made before a reveal are replayed without asking the program, so an honest program with a memory
or with random draws is asked exactly what it was asked first, in the same order, and is never
taken for a look-ahead."""
from __future__ import annotations

import random

import numpy as np
import pytest

from raise_plugin.engine import Engine, ProcessExecutor, SandboxLimits
from raise_plugin.engine.judge.program_process import SEED
from tasks import get_task

# shortest processing time for its first 60 decisions, longest after; noisy cheapest insertion,
# now and then the first candidate: each depends on what it was asked before, in order
REMEMBERS = {
    "ojsp": """
calls = 0


def priority(current_time, candidate_operations):
    global calls
    calls += 1
    durations = candidate_operations[:, 1].astype(float)
    return -durations if calls <= 60 else durations
""",
    "ovrp": """
calls = 0


def priority(customer_features, candidate_insertions):
    global calls
    calls += 1
    delta = candidate_insertions[:, 2]
    return -delta if calls <= 20 else -candidate_insertions[:, 6]
""",
}
RANDOM = {
    "ojsp": """
import random

import numpy as np


def priority(current_time, candidate_operations):
    if random.random() < 0.1:
        return np.zeros(len(candidate_operations))
    return -candidate_operations[:, 1] + 30.0 * np.random.random(len(candidate_operations))
""",
    "ovrp": """
import random

import numpy as np


def priority(customer_features, candidate_insertions):
    if random.random() < 0.1:
        return np.zeros(len(candidate_insertions))
    return -candidate_insertions[:, 2] + 0.2 * np.random.random(len(candidate_insertions))
""",
}


def _alone(task, code: str, instances) -> list[float]:
    """The program's metric on each instance in a fresh module, the global generators seeded as
    the judge seeds them."""
    metrics = []
    for instance in instances:
        namespace: dict = {}
        exec(code, namespace)
        random.seed(SEED)
        np.random.seed(SEED)
        metrics.append(task.evaluate(namespace["priority"], instance))
    return metrics


@pytest.mark.parametrize("name", ["ojsp", "ovrp"])
@pytest.mark.parametrize("kind", ["memory", "random"])
def test_an_honest_program_that_remembers_or_draws_passes_every_check(name, kind):
    task = get_task(name)
    code = (REMEMBERS if kind == "memory" else RANDOM)[name]
    instances = task.nominal_instances()
    alone = _alone(task, code, instances)
    namespace: dict = {}
    exec(code, namespace)
    carried = [task.evaluate(namespace["priority"], instance) for instance in instances]
    assert carried != alone  # what it was asked before changes its decisions
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with ProcessExecutor(1, limits) as pool:
        engine = Engine(name, pool, limits=limits)
        results = [f.result() for _ in range(3) for f in engine.submit_each(code, instances)]  # 15 checks
    assert all(r.valid for r in results), [r.reason for r in results if not r.valid]
    assert [r.metrics[0] for r in results] == alone * 3


# honest programs (they decide from what they are given) whose decisions the check's own steps once
# took otherwise: the lowest recursion limit the program's depth allows (the check's steps run a few
# frames deeper than the job's run, and a RecursionError there lost a decision), a masked array (the
# check took the data under the mask for a score where the simulator leaves masked entries out)
SCORES = {"obp": "item - bins", "ojsp": "-candidate_operations[:, 1]", "ovrp": "-candidate_insertions[:, 2]"}
ARGUMENTS = {"obp": "item, bins", "ojsp": "current_time, candidate_operations",
             "ovrp": "customer_features, candidate_insertions"}
TIGHT_LIMIT = """
import sys

import numpy as np


def depth():
    frame, count = sys._getframe(), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1
    return count


def priority({arguments}):
    sys.setrecursionlimit(1000)
    limit = depth()
    while True:  # the lowest limit this depth allows
        try:
            sys.setrecursionlimit(limit)
            break
        except RecursionError:
            limit += 1
    return {scores}
"""
MASKED = """
import numpy as np


def priority({arguments}):
    scores = np.ma.masked_array(np.asarray({scores}, dtype=float))
    if len(scores) > 1:
        scores[0] = np.ma.masked
    return scores
"""


@pytest.mark.parametrize("name", ["obp", "ojsp", "ovrp"])
@pytest.mark.parametrize("kind", ["recursion limit", "masked"])
def test_an_honest_program_with_a_low_recursion_limit_or_masked_scores_passes_every_check(name, kind):
    task = get_task(name)
    code = (TIGHT_LIMIT if kind == "recursion limit" else MASKED).format(arguments=ARGUMENTS[name],
                                                                        scores=SCORES[name])
    instances = task.nominal_instances()
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with ProcessExecutor(1, limits) as pool:
        results = [f.result() for f in Engine(name, pool, limits=limits).submit_each(code, instances)]
    assert all(r.kind != "foresight" for r in results), [r.reason for r in results if not r.valid]
    plain = code if kind == "masked" else f"def priority({ARGUMENTS[name]}):\n    return {SCORES[name]}\n"
    assert [r.metrics[0] for r in results] == _alone(task, plain, instances)  # its decisions, the limit aside
