"""The staged look-ahead check's plans and copies (``Task.future_stages``): every decision is
made with the units after its own known ones unknown, and until a unit is revealed its
replacement leaves every decision's arguments as they are on the instance."""
from __future__ import annotations

import numpy as np
import pytest

from raise_plugin.engine.judge.foresight import _same_when_restarted, _staging, same_inputs
from raise_plugin.engine.judge.stages import apply_patch
from tasks import get_task
from tasks.common.decision import Recorder
from tasks.common.reveal import unit_stages


def test_a_stage_ends_before_every_decision_that_knows_a_unit_more():
    assert unit_stages([1, 1, 2, 2, 2, 5, 5], np.random.default_rng(0)) == ([2, 5], [1, 2, 5])
    assert unit_stages([3, 3, 3], np.random.default_rng(0)) is None  # nothing more is ever known
    assert unit_stages([1], np.random.default_rng(0)) is None


def test_beyond_the_most_stages_the_ends_are_drawn_and_the_reveals_follow_them():
    known = np.arange(1, 201)
    ends, revealed = unit_stages(known, np.random.default_rng(3), most=16)
    assert len(ends) == 16 and ends == sorted(set(ends)) and 0 < ends[0] and ends[-1] < 200
    assert revealed == [int(known[e - 1]) for e in ends] + [200]
    again = unit_stages(known, np.random.default_rng(4), most=16)
    assert again[0] != ends  # the draws decide which


def _runs(name: str):
    """(instance, decisions) of every baseline on the nominal instances and on every fifth
    instance of the test suite."""
    task = get_task(name)
    instances = task.nominal_instances() + [i for d in task.suite("test") for i in d.instances][::5]
    for instance in instances:
        for function in task.baselines.values():
            recorder = Recorder(function)
            task.evaluate(recorder, instance)
            yield task, instance, recorder.decisions


@pytest.mark.parametrize("name", ["ojsp", "ovrp"])
def test_each_reveal_keeps_every_argument_and_hides_the_next_unit(name):
    """Up to the last decision, the copy in each of its states gives every decision the arguments
    it has on the instance (counted exactly: no honest program can be taken for a look-ahead),
    every decision is in a state whose next unit is still replaced, and once every stage is
    revealed the copy is the instance."""
    rng = np.random.default_rng(11)
    checked = 0
    for task, instance, decisions in _runs(name):
        start, stages, horizon = task.future_stages(instance, rng, decisions)
        assert horizon == decisions.size and stages
        assert [end for end, _ in stages] == sorted({end for end, _ in stages})
        assert _same_when_restarted(task, instance, start, stages, decisions, decisions.size - 1)
        keys = sorted({key for _, patch in stages for key in patch})
        assert any(not np.array_equal(start[k], instance[k]) for k in keys)  # something is hidden
        revealed = {k: np.array(start[k]) for k in keys}
        before = [np.array(start[k]) for k in keys]
        for _, patch in stages:
            apply_patch(revealed, patch)
        for key in keys:  # the copy's arrays are not written by the plan itself
            assert np.array_equal(start[key], before[keys.index(key)])
        last = {k: np.asarray(instance[k]) for k in keys}
        shown = [np.array_equal(revealed[k], last[k]) for k in keys]
        assert all(shown) or name == "ovrp"  # OVRP's customers without a decision after the last stay hidden
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("name", ["ojsp", "ovrp"])
def test_a_decision_differs_on_the_copy_only_when_the_program_reads_what_is_hidden(name):
    """A look at the hidden part breaks the equality the check counts: the copy before any reveal
    gives a later decision other arguments once one hidden unit is revealed out of turn."""
    task, instance, decisions = next(_runs(name))
    start, stages, horizon = task.future_stages(instance, np.random.default_rng(5), decisions)
    assert not _same_when_restarted(task, instance, start, [], decisions, horizon - 1)


def test_obp_is_revealed_in_place_and_its_copy_counted_as_before():
    task = get_task("obp")
    assert task.stages_in_place and not get_task("ojsp").stages_in_place and not get_task("ovrp").stages_in_place
    instance = task.nominal_instances()[0]
    recorder = Recorder(task.baselines["BestFit"])
    task.evaluate(recorder, instance)
    start, stages, horizon = task.future_stages(instance, np.random.default_rng(2), recorder.decisions)
    assert same_inputs(task, instance, start, recorder.decisions[:horizon], exact=True, stages=stages) == horizon


def test_a_task_whose_check_fails_checks_nothing():
    """A task's own ``future_stages`` or ``future_replaced`` that raises (an own task's bug) leaves
    the job unchecked: the program did nothing wrong."""
    class Broken:
        def future_stages(self, instance, rng, decisions):
            raise IndexError("the task's bug")

    class BrokenCut:
        def future_replaced(self, instance, rng):
            raise ValueError("the task's bug")

    rng = np.random.default_rng(0)
    assert _staging(Broken(), {}, rng, np.zeros(3, dtype=np.int64)) is None
    assert _staging(BrokenCut(), {}, rng, np.zeros(3, dtype=np.int64)) is None
