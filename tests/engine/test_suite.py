"""A suite's evaluation: programs a job per instance, a task's own rules a job per worker, the same metrics."""
from __future__ import annotations

import inspect

import pytest

from raise_plugin.engine import Engine
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.errors import UserError
from tasks import get_task
from tasks.common.classical import classical_rules


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
