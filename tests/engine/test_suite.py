"""A suite's evaluation: programs a job per instance, a task's own rules a job per worker, the same metrics."""
from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from raise_plugin.engine import Engine
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.errors import UserError
from tasks import get_task
from tasks.common.classical import classical_rules
from tasks.common.suite import Dataset


@pytest.mark.parametrize("workers", [1, 2])
def test_a_baseline_takes_a_job_per_worker_and_scores_each_instance_as_in_process(monkeypatch, workers):
    task = get_task("ovrp")
    datasets = task.validation_suite(per_dataset=1)
    instances = [inst for d in datasets for inst in d.instances]
    rule = classical_rules(task)["SP-Insert"]
    code = inspect.getsource(inspect.getmodule(rule)) + f"\n\ndef priority(*args):\n    return {rule.__name__}(*args)\n"
    calls = {"submit_indices": [], "submit_each": []}
    for name in calls:
        original = getattr(Engine, name)

        def counted(self, program, chosen, *args, _name=name, _original=original, **kwargs):
            calls[_name].append(program)
            return _original(self, program, chosen, *args, **kwargs)
        monkeypatch.setattr(Engine, name, counted)
    rows = evaluate_suite("ovrp", [Heuristic("SP-Insert", baseline="SP-Insert"), Heuristic("as code", code=code)],
                          datasets, workers=workers, progress=False)
    # the task's rule: one job per worker; the program (the same rule as text): one job per instance
    assert [spec.baseline for spec in calls["submit_indices"]] == ["SP-Insert"] * workers
    assert [spec.label for spec in calls["submit_each"]] == ["as code"]
    in_process = [task.evaluate(rule, inst) for inst in instances]
    for name in ("SP-Insert", "as code"):
        mine = [r for r in rows if r.heuristic == name]
        assert [r.metric for r in mine] == in_process  # bit for bit, whichever way the jobs were cut
        assert all(r.valid and r.kind == "ok" and r.reason == "" for r in mine)
        where = [(d.name, i) for d in datasets for i in range(len(d.instances))]
        assert [(r.dataset, r.instance) for r in mine] == where


def test_a_baseline_past_its_limit_fails_on_every_instance_of_its_job_with_the_reason():
    task = get_task("obp")
    datasets = task.validation_suite(per_dataset=1)[:2]
    rows = evaluate_suite("obp", [Heuristic("BestFit", baseline="BestFit")], datasets, workers=1, progress=False,
                          timeout=1e-4)
    assert len(rows) == sum(len(d.instances) for d in datasets)
    assert all(not r.valid and r.kind == "timeout" and r.reason.startswith("timed out after") for r in rows), rows


STUCK_RULE = """

def stuck_on_95(job, loads):
    \"\"\"Least loaded, but never ends on a job of size 95.\"\"\"
    while job == 95:
        pass
    return -loads


LoadBalance.baselines = {"LeastLoaded": least_loaded, "Stuck": stuck_on_95}
"""


def test_a_baseline_job_past_its_limit_keeps_the_instances_it_finishes(tmp_path, fresh_registry):
    # a rule's instances share one job with the sum of their limits; one instance it never ends made
    # every instance of the job invalid ("timed out after 2 s" with --timeout 1), and how many
    # depended on the workers: each instance now goes again alone, under its own limit
    path = tmp_path / "stuck_task.py"
    path.write_text((Path(__file__).resolve().parents[2] / "examples" / "load_balance.py").read_text() + STUCK_RULE)
    task = get_task(f"{path}:LoadBalance")
    rng = np.random.default_rng(0)
    instances = [task.make_instance(np.full(20, size), rng, m=4) for size in (10, 95, 30)]
    rows = evaluate_suite(task.name, [Heuristic("Stuck", baseline="Stuck")], [Dataset("sizes", {}, instances)],
                          workers=1, progress=False, timeout=1)
    assert [(r.valid, r.kind) for r in rows] == [(True, "ok"), (False, "timeout"), (True, "ok")], rows
    assert rows[1].reason == "timed out after 1 s"
    assert [rows[0].metric, rows[2].metric] == [task.evaluate(task.baselines["Stuck"], instances[i]) for i in (0, 2)]


BEST = Heuristic("best", baseline="BestFit")


@pytest.mark.parametrize("call, says", [
    (lambda ds: evaluate_suite("nosuch", [BEST], ds), "^task: unknown task 'nosuch'"),
    (lambda ds: evaluate_suite("obp", [Heuristic("x", baseline="Nope")], ds),
     "^heuristics: obp has no baseline 'Nope'"),
    (lambda ds: evaluate_suite("obp", "BestFit", ds), "^heuristics: give a list of Heuristic"),
    (lambda ds: evaluate_suite("obp", [BEST, Heuristic("best", code="def priority(item, bins):\n    return -bins")],
                               ds),
     "^heuristics: best named twice"),
    (lambda ds: evaluate_suite("obp", [BEST], ds, workers=0), "^workers: must be a whole number of at least 1, got 0"),
    (lambda ds: evaluate_suite("obp", [BEST], []), "^datasets: no instance to evaluate on"),
    (lambda ds: Heuristic("x"), "^Heuristic 'x': give exactly one of code"),
    (lambda ds: Heuristic("x", code="", baseline="BestFit"), "^Heuristic 'x': give exactly one of code")])
def test_a_bad_argument_is_one_user_error_before_any_worker_starts(call, says):
    with pytest.raises(UserError, match=says):
        call(get_task("obp").suite("nominal"))
