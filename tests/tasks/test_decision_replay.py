"""Recording a heuristic's decisions and replaying them, on the compiled loops and the Python ones.

A ``Recorder`` must not change the metric; a ``Replay`` of its decisions must give the same
metric bit for bit, calling nothing; both loops must record the same decisions; a decision
limit stops the run with exactly the first ``limit`` decisions; a replay refuses a decision
outside the candidates, too few decisions and (through ``check_all_used``) too many.
"""
import numpy as np
import pytest

from tasks import get_task
from tasks.common import decision
from tasks.common.decision import DecisionLimit, Recorder, Replay
from tasks.common.errors import HeuristicError
from tasks.obp import simulator as obp_simulator
from tasks.ojsp import simulator as ojsp_simulator
from tasks.ovrp import simulator as ovrp_simulator

LOOPS = {"obp": (obp_simulator, "_fastpack"), "ojsp": (ojsp_simulator, "_fastdispatch"),
         "ovrp": (ovrp_simulator, "_fastroute")}


def last_candidate(first, second):
    """Always the last candidate (in OBP it opens the last empty bin, leaving the used-prefix path)."""
    return np.arange(len(second), dtype=np.float64)


def noisy(seed):
    """Random scores from the heuristic's own generator: only a replay can reproduce its run."""
    rng = np.random.default_rng(seed)

    def priority(first, second):
        return rng.random(len(second))
    return priority


def longest_first(current_time, operations):
    return operations[:, 1]


EXTRA = {"obp": {"last": last_candidate},
         "ojsp": {"last": last_candidate, "LPT": longest_first},
         "ovrp": {"last": last_candidate,
                  "cheapest": lambda features, candidates: -candidates[:, 2]}}


def small_instances(task):
    rng = np.random.default_rng(11)
    cells = task.shift.cells
    uniform = np.full(cells, 1.0 / cells)
    skewed = np.linspace(1.0, 3.0, cells)
    skewed /= skewed.sum()
    if task.name == "obp":
        return [task.sample_instance(uniform, rng, length=200), task.sample_instance(skewed, rng, length=300)]
    if task.name == "ojsp":
        return [task.sample_instance(uniform, rng, length=5), task.sample_instance(skewed, rng, length=8)]
    # OVRP: always 50 customers; one vehicle opens overflow routes (customers with no decision)
    return [task.sample_instance(uniform, rng, vehicles=1), task.sample_instance(skewed, rng, vehicles=3)]


@pytest.fixture(params=["obp", "ojsp", "ovrp"])
def task(request):
    return get_task(request.param)


@pytest.fixture(params=[pytest.param(True, id="compiled"), pytest.param(False, id="python")])
def loop(request, task, monkeypatch):
    """Which loop ``task.evaluate`` runs: the compiled one (skipped when not built) or the Python one."""
    module, name = LOOPS[task.name]
    if request.param and getattr(module, name) is None:
        pytest.skip("the compiled loop is not built here (no C compiler at install)")
    if not request.param:
        monkeypatch.setattr(module, name, None)
    return request.param


def run_python(task, priority, instance):
    module, name = LOOPS[task.name]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, name, None)
        return task.evaluate(priority, instance)


def recorded(task, priority, instance):
    recorder = Recorder(priority)
    metric = task.evaluate(recorder, instance)
    return metric, recorder.decisions


def counting(priority):
    """``priority`` and the candidate count of every call it gets."""
    counts = []

    def wrapped(first, second):
        counts.append(len(second))
        return priority(first, second)
    return wrapped, counts


def test_recording_and_replay_give_the_plain_metric(task, loop):
    instances = task.nominal_instances() if loop else task.nominal_instances()[:1]
    instances = instances + small_instances(task)
    heuristics = {**task.baselines, **EXTRA[task.name]}
    for name, priority in heuristics.items():
        for instance in instances:
            plain = task.evaluate(priority, instance)
            metric, decisions = recorded(task, priority, instance)
            assert metric == plain, name
            assert decisions.dtype == np.int64 and decisions.ndim == 1 and len(decisions) > 0
            replay = Replay(decisions)
            assert task.evaluate(replay, instance) == plain, name
            assert replay.used == len(decisions)
            replay.check_all_used()


def test_one_decision_per_heuristic_call(task, loop):
    instance = small_instances(task)[0]
    priority, counts = counting(next(iter(task.baselines.values())))
    metric, decisions = recorded(task, priority, instance)
    assert len(decisions) == len(counts)
    assert all(0 <= d < c for d, c in zip(decisions.tolist(), counts))
    if task.name == "obp":
        assert len(decisions) == instance["num_items"]
    if task.name == "ojsp":
        assert len(decisions) == instance["num_jobs"] * instance["num_machines"]  # single candidates too
    if task.name == "ovrp":  # one vehicle: some customers open overflow routes, with no decision
        result = ovrp_simulator.simulate(instance, Replay(decisions))
        assert result.overflow_routes > 0 and len(decisions) == instance["num_customers"] - result.overflow_routes


def test_both_loops_record_the_same_decisions(task):
    module, name = LOOPS[task.name]
    if getattr(module, name) is None:
        pytest.skip("the compiled loop is not built here (no C compiler at install)")
    instances = task.nominal_instances()[:1] + small_instances(task)
    for priority in [*task.baselines.values(), *EXTRA[task.name].values()]:
        for instance in instances:
            compiled_metric, compiled = recorded(task, priority, instance)
            python = Recorder(priority)
            assert run_python(task, python, instance) == compiled_metric
            assert np.array_equal(python.decisions, compiled)
            # and each loop replays the other's recording
            assert run_python(task, Replay(compiled), instance) == compiled_metric


def test_a_run_only_a_replay_can_reproduce(task, loop):
    instance = small_instances(task)[1]
    recorder = Recorder(noisy(5))
    metric = task.evaluate(recorder, instance)
    assert task.evaluate(Replay(recorder.decisions), instance) == metric
    assert task.evaluate(Replay(recorder.decisions.tolist()), instance) == metric


def test_the_decision_limit_stops_the_run_with_the_first_decisions(task, loop):
    instance = small_instances(task)[0]
    priority = next(iter(task.baselines.values()))
    _, full = recorded(task, priority, instance)
    for limit in (0, 1, 7, len(full) - 1):
        counted, counts = counting(priority)
        recorder = Recorder(counted, limit=limit)
        with pytest.raises(DecisionLimit) as raised:
            task.evaluate(recorder, instance)
        assert not isinstance(raised.value, HeuristicError)
        assert np.array_equal(recorder.decisions, full[:limit])
        assert np.array_equal(raised.value.decisions, full[:limit])
        assert len(counts) == limit  # the heuristic is never called past the limit
    exact = Recorder(priority, limit=len(full))  # a run needing exactly the limit ends normally
    assert task.evaluate(exact, instance) == task.evaluate(priority, instance)
    assert np.array_equal(exact.decisions, full)


def test_a_failing_heuristic_keeps_the_decisions_before_it(task, loop):
    instance = small_instances(task)[0]
    priority = next(iter(task.baselines.values()))

    calls = []

    def fails_late(first, second):
        calls.append(len(second))
        if len(calls) > 4:
            raise ValueError("enough")
        return priority(first, second)
    recorder = Recorder(fails_late)
    with pytest.raises(HeuristicError, match="priority raised ValueError: enough"):
        task.evaluate(recorder, instance)
    assert np.array_equal(recorder.decisions, recorded(task, priority, instance)[1][:4])


def test_replay_refuses_a_decision_outside_the_candidates(task, loop):
    instance = small_instances(task)[0]
    priority, counts = counting(next(iter(task.baselines.values())))
    _, decisions = recorded(task, priority, instance)
    k = len(decisions) // 2
    for wrong in (counts[k], counts[k] + 5, -1, 2**62):
        bad = decisions.copy()
        bad[k] = wrong
        noun = "candidate" if counts[k] == 1 else "candidates"
        with pytest.raises(HeuristicError) as raised:
            task.evaluate(Replay(bad), instance)
        assert str(raised.value) == f"decision {k} is {wrong}, not one of the {counts[k]} {noun}"


def test_replay_refuses_too_few_and_too_many_decisions(task, loop):
    instance = small_instances(task)[0]
    _, decisions = recorded(task, next(iter(task.baselines.values())), instance)
    few = decisions[:-3]
    with pytest.raises(HeuristicError) as raised:
        task.evaluate(Replay(few), instance)
    assert str(raised.value) == f"the program's process gave {len(few)} decisions; the instance needs more"
    with pytest.raises(HeuristicError, match="gave 0 decisions; the instance needs more"):
        task.evaluate(Replay([]), instance)

    many = Replay(np.append(decisions, [0, 0]))
    metric = task.evaluate(many, instance)  # the extra decisions are the caller's check
    assert metric == task.evaluate(Replay(decisions), instance)
    assert many.used == len(decisions)
    with pytest.raises(HeuristicError) as raised:
        many.check_all_used()
    assert str(raised.value) == (f"the program's process gave {len(decisions) + 2} decisions; "
                                 f"the instance needed {len(decisions)}")


def test_replay_calls_nothing(task, loop, monkeypatch):
    instance = small_instances(task)[0]
    _, decisions = recorded(task, next(iter(task.baselines.values())), instance)
    metric = task.evaluate(Replay(decisions), instance)

    def never(*args, **kwargs):
        raise AssertionError("a replay called the check")
    monkeypatch.setattr(decision, "check_priorities", never)
    assert task.evaluate(Replay(decisions), instance) == metric


def test_replay_takes_only_integer_sequences():
    for bad in ([0.0, 1.0], [[0, 1]], ["0"], [True, False]):
        with pytest.raises(HeuristicError, match="the program's process gave decisions"):
            Replay(bad)
    frozen = Replay(np.array([1, 2, 3], dtype=np.int32))
    assert frozen.decisions.dtype == np.int64 and not frozen.decisions.flags.writeable
    with pytest.raises(TypeError):
        Recorder(frozen)
    with pytest.raises(ValueError):
        Recorder(last_candidate, limit=-1)
    # a simulator that calls its heuristic itself gets the heuristic's answer and records nothing
    direct = Recorder(last_candidate)
    assert direct(0, [5, 6, 7]).tolist() == [0.0, 1.0, 2.0] and len(direct) == 0
    assert not callable(frozen)


def test_the_compiled_loops_replay_without_a_heuristic():
    """The loops' own interface: priority None and the decisions; the count used comes back."""
    module, name = LOOPS["obp"]
    if getattr(module, name) is None:
        pytest.skip("the compiled loop is not built here (no C compiler at install)")
    items = np.array([5, 3, 4, 6], dtype=np.int64)
    residual = np.full(4, 10, dtype=np.int64)
    assert module._fastpack.pack(items, residual, None, None, np.zeros(4, dtype=np.int64)) == (None, 4)
    assert residual.tolist() == [2, 0, 10, 10]
    with pytest.raises(IndexError) as raised:
        module._fastpack.pack(items, np.full(4, 10, dtype=np.int64), None, None, np.array([0, 4], dtype=np.int64))
    assert raised.value.args == (1, 4, 4)  # decision 1 is 4 among 4 candidates: the first bin and 3 empty ones
    with pytest.raises(IndexError) as raised:
        module._fastpack.pack(items, np.full(4, 10, dtype=np.int64), None, None, np.array([0], dtype=np.int64))
    assert raised.value.args == (1,)
    slots = np.full(2, -1, dtype=np.int64)
    assert module._fastpack.pack(items, np.full(4, 10, dtype=np.int64), last_candidate, None, slots) == -1
    assert slots.tolist() == [3, 3]


@pytest.mark.parametrize("returned, said", [
    (None, "priority returned None, expected an array of shape (3,)"),  # each said "returned shape (), expected (3,)"
    ("high", "priority returned a str, expected an array of shape (3,)"),
    ((x for x in range(3)), "priority returned a generator, expected an array of shape (3,)"),
    (7, "priority returned an int, expected an array of shape (3,)"),
    (np.float64(0.5), "priority returned a float64, expected an array of shape (3,)"),
    (np.array(0.5), "priority returned shape (), expected (3,)"),  # an array, of the wrong shape: as before
    ([1.0, 2.0], "priority returned shape (2,), expected (3,)"),
])
def test_a_heuristic_that_returns_no_array_is_told_what_it_returned(returned, said):
    from tasks.common.decision import check_priorities

    with pytest.raises(HeuristicError) as caught:
        check_priorities(returned, 3)
    assert str(caught.value) == said


def test_checking_an_answer_imports_nothing():
    """Checking an answer imported numpy's masked arrays at the first one checked (``np.ma``), in a
    program's process after its program ran, on whatever the program had changed there: a look-ahead
    check whose process met a builtin replaced ran out of time in that import. A process that never
    imported them checks answers without them."""
    import subprocess
    import sys
    code = ("import sys\nimport numpy as np\nfrom tasks.common.decision import check_priorities\n"
            "assert 'numpy.ma' not in sys.modules\n"
            "assert check_priorities([1.0, 3.0, 2.0], 3) == 1 and check_priorities((4, 1), 2) == 0\n"
            "assert 'numpy.ma' not in sys.modules, 'imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_masked_entry_is_never_chosen():
    """A masked array's masked entries hold no score: the choice is among the others, as np.ma's
    argmax makes it (the data under the mask was taken as a score: 1e9 there won every call)."""
    from tasks.common.decision import check_priorities

    scores = np.ma.masked_array([1e9, 2.0, 5.0, np.nan], mask=[True, False, False, True])
    assert check_priorities(scores, 4) == 2
    assert check_priorities(np.ma.masked_array([3, 7, 7], mask=[False, True, False]), 3) == 2
    with pytest.raises(HeuristicError, match=r"^priority returned a masked array with every score masked$"):
        check_priorities(np.ma.masked_array([1.0, 2.0], mask=[True, True]), 2)
    with pytest.raises(HeuristicError, match=r"non-finite score \(nan\)"):  # NaN where it is not masked
        check_priorities(np.ma.masked_array([1.0, np.nan], mask=[True, False]), 2)
    with pytest.raises(HeuristicError, match=r"^priority returned a masked array of shape \(2,\), expected \(3,\)$"):
        check_priorities(np.ma.masked_array([1.0, 2.0]), 3)


def test_a_masked_array_decides_as_its_unmasked_scores_on_both_loops(task, loop):
    """Masking the first of several candidates rules it out, as -inf there does."""
    def masked(first, second):
        scores = np.ma.masked_array(-last_candidate(first, second))
        if len(scores) > 1:
            scores[0] = np.ma.masked
            scores.data[0] = 1e9
        return scores

    def ruled_out(first, second):
        scores = -last_candidate(first, second)
        if len(scores) > 1:
            scores[0] = -np.inf
        return scores

    for instance in small_instances(task):
        metric, decisions = recorded(task, masked, instance)
        expected, chosen = recorded(task, ruled_out, instance)
        assert metric == expected and decisions.tolist() == chosen.tolist()
        assert (decisions > 0).any()  # the masked entry (1e9 under its mask) was chosen at every call
