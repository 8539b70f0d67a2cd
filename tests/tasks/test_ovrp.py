"""OVRP: feasible routes, the SPEC's candidate columns, Clarke-Wright reference, deterministic suites."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks import get_task
from tasks.common.errors import HeuristicError
from tasks.common.families import FAMILIES
from tasks.ovrp import COLUMNS, FEATURES, OVRPTask, RoutingResult, simulate, simulator, violations
from tasks.ovrp.baselines import BASELINES, cheapest_insertion
from tasks.ovrp.instances import family_instance, make_instance
from tasks.ovrp.reference import clarke_wright, clarke_wright_length, out_and_back_length, routes_length

TASK = get_task("ovrp")
SUITE = TASK.test_suite()


def random_priority(seed: int):
    """A seeded heuristic that scores candidates at random (exercises arbitrary choices)."""
    rng = np.random.default_rng(seed)

    def priority(customer_features, candidate_insertions):
        return rng.random(len(candidate_insertions))
    return priority


def naive_simulate(instance, priority, record):
    """The SPEC's semantics written plainly, one candidate at a time; ``record`` gets every input."""
    coords, demands = instance["coords"], instance["demands"]
    depot, capacity, n = instance["depot"], instance["capacity"], instance["num_customers"]
    ref = instance["reference_length"]

    def point(c):
        return depot if c is None else coords[c]

    def dist(u, v):
        return math.dist(point(u), point(v))

    def length(route):
        stops = [None] + route + [None]
        return sum(dist(stops[k], stops[k + 1]) for k in range(len(stops) - 1))

    routes = [[] for _ in range(instance["vehicles"])]
    seen = 0
    for step, c in enumerate(instance["order"]):
        d = int(demands[c])
        seen += d
        loads = [int(sum(demands[r])) if r else 0 for r in routes]
        free = sum(capacity - load for load in loads)
        rows = []
        for r, route in enumerate(routes):
            if loads[r] + d > capacity:
                continue
            stops = [None] + route + [None]
            near = min(dist(c, s) for s in stops[:-1])
            for p in range(len(route) + 1):
                delta = dist(stops[p], c) + dist(c, stops[p + 1]) - dist(stops[p], stops[p + 1])
                rows.append([r, p, delta, (capacity - loads[r] - d) / capacity, loads[r] / capacity,
                             len(route) / n, near, (length(route) + delta) / ref])
        if not rows:
            routes.append([int(c)])
            continue
        features = np.array([coords[c][0], coords[c][1], d / capacity, dist(c, None), step / n, free / seen])
        candidates = np.array(rows)
        record.append((features, candidates))
        choice = int(np.argmax(priority(features.copy(), candidates.copy())))
        r, p = int(rows[choice][0]), int(rows[choice][1])
        routes[r].insert(p, int(c))
    return routes


class Recorder:
    def __init__(self, priority):
        self.priority, self.calls = priority, []

    def __call__(self, features, candidates):
        self.calls.append((features.copy(), candidates.copy()))
        return self.priority(features, candidates)


COMPILED_LOOP = simulator._fastroute


# -- the simulator ---------------------------------------------------------------


@pytest.mark.parametrize("dataset", SUITE, ids=lambda d: d.name)
def test_routes_are_feasible_under_random_heuristics(dataset, compiled):
    for i, instance in enumerate(dataset.instances):
        result = simulate(instance, random_priority(i), compiled=compiled)
        assert violations(instance, result) == []


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baselines_build_feasible_routes_on_every_family(name, compiled):
    for dataset in SUITE:
        for instance in dataset.instances[:2]:
            assert violations(instance, simulate(instance, BASELINES[name], compiled=compiled)) == []


@pytest.mark.parametrize("vehicles", [1, 5, 15])
@pytest.mark.parametrize("make", [lambda: cheapest_insertion, lambda: BASELINES["NF-Insert"],
                                  lambda: random_priority(7)], ids=["cheapest", "nf", "random"])
def test_simulator_matches_the_plain_reference_semantics(vehicles, make, compiled):
    instance = make_instance(np.random.default_rng(3).integers(1, 11, 50), np.random.default_rng(4), vehicles)
    plain: list = []
    expected = naive_simulate(instance, make(), plain)
    fast = Recorder(make())  # a fresh heuristic: the random one replays the same stream
    result = simulate(instance, fast, compiled=compiled)
    assert result.routes == expected
    assert len(fast.calls) == len(plain)
    for (f1, c1), (f2, c2) in zip(fast.calls, plain):
        assert f1.shape == (len(FEATURES),) and c1.shape[1] == len(COLUMNS)
        np.testing.assert_allclose(f1, f2, rtol=0, atol=1e-12)
        np.testing.assert_allclose(c1, c2, rtol=0, atol=1e-12)
    assert result.total_length == pytest.approx(routes_length(instance["depot"], instance["coords"], expected),
                                                rel=1e-12)


def test_every_customer_is_served_by_opening_overflow_routes(compiled):
    instance = make_instance(np.full(50, 10), np.random.default_rng(0), vehicles=1)
    result = simulate(instance, cheapest_insertion, compiled=compiled)
    assert result.overflow_routes == 12  # 50 customers of demand 10, Q = 40: 13 routes
    assert violations(instance, result) == []


def test_candidates_are_fresh_arrays_a_heuristic_may_overwrite(compiled):
    kept = []

    def vandal(features, candidates):
        kept.append((features, candidates))  # holding on to them changes nothing either
        scores = -candidates[:, 2].copy()
        candidates[:] = 0.0
        features[:] = np.nan
        return scores
    instance = TASK.nominal_instances()[0]
    assert simulate(instance, vandal, compiled=compiled).routes == simulate(
        instance, cheapest_insertion, compiled=compiled).routes
    assert len({id(c) for _, c in kept}) == len(kept) and all(np.all(c == 0.0) for _, c in kept)


def test_no_route_ever_exceeds_capacity_even_when_filled_exactly(compiled):
    # demands 8 and 10 fill Q = 40 exactly in many ways; the exact-fill comparison must admit them
    instance = make_instance(np.tile([10, 10, 10, 10, 8], 10), np.random.default_rng(1), vehicles=5)
    result = simulate(instance, BASELINES["SP-Insert"], compiled=compiled)
    loads = [int(instance["demands"][r].sum()) if r else 0 for r in result.routes]
    assert max(loads) <= 40 and 40 in loads
    assert violations(instance, result) == []


@settings(max_examples=25, deadline=None)
@given(demands=st.lists(st.integers(1, 10), min_size=1, max_size=50), vehicles=st.integers(1, 15),
       seed=st.integers(0, 2**16))
def test_random_instances_and_choices_are_always_feasible(demands, vehicles, seed):
    instance = make_instance(np.array(demands), np.random.default_rng(seed), vehicles)
    result = simulate(instance, random_priority(seed), compiled=False)
    assert violations(instance, result) == []
    if simulator._fastroute is not None:
        assert simulate(instance, random_priority(seed), compiled=True) == result


# -- the compiled loop is the Python loop ----------------------------------------

def _recorded_runs(instance, make):
    """(result, recorded calls) of the compiled and of the Python loop, each with a fresh heuristic."""
    runs = []
    for flag in (True, False):
        recorder = Recorder(make())
        runs.append((simulate(instance, recorder, compiled=flag), recorder.calls))
    return runs


@pytest.mark.parametrize("make", [lambda: BASELINES["NF-Insert"], lambda: BASELINES["SP-Insert"],
                                  lambda: BASELINES["UW-Insert"], lambda: random_priority(11)],
                         ids=["nf", "sp", "uw", "random"])
def test_both_loops_give_identical_results_and_arrays_on_the_suite(make):
    if simulator._fastroute is None:
        pytest.skip("the compiled loop is not built here")
    for dataset in SUITE:
        for instance in dataset.instances:
            (fast, fast_calls), (slow, slow_calls) = _recorded_runs(instance, make)
            assert fast.total_length == slow.total_length  # exact, not approximate
            assert fast.routes == slow.routes
            assert fast.overflow_routes == slow.overflow_routes and fast.vehicles == slow.vehicles
            assert len(fast_calls) == len(slow_calls)
            for (f1, c1), (f2, c2) in zip(fast_calls, slow_calls):
                assert f1.dtype == f2.dtype == c1.dtype == c2.dtype == np.float64
                assert f1.tobytes() == f2.tobytes() and c1.shape == c2.shape and c1.tobytes() == c2.tobytes()


def test_unusual_inputs_give_the_same_results_on_both_loops():
    instance = dict(SUITE[2].instances[1])
    instance["demands"] = instance["demands"].astype(np.int32)
    instance["order"] = instance["order"].tolist()
    instance["coords"] = np.asfortranarray(instance["coords"])
    expected = simulate(SUITE[2].instances[1], BASELINES["SP-Insert"], compiled=False)
    assert simulate(instance, BASELINES["SP-Insert"]) == expected
    assert simulate(instance, BASELINES["SP-Insert"], compiled=False) == expected
    # a zero demand is outside the compiled loop's domain: it hands the instance to the Python loop
    zero = dict(SUITE[2].instances[1])
    zero["demands"] = zero["demands"].copy()
    zero["demands"][zero["order"][7]] = 0
    assert simulate(zero, BASELINES["UW-Insert"]) == simulate(zero, BASELINES["UW-Insert"], compiled=False)


# -- the feasibility checker -----------------------------------------------------

def test_checker_reports_every_kind_of_violation():
    instance = TASK.nominal_instances()[0]
    good = simulate(instance, BASELINES["SP-Insert"])
    assert violations(instance, good) == []
    busy = max(range(len(good.routes)), key=lambda r: len(good.routes[r]))

    dropped = [list(r) for r in good.routes]
    dropped[busy].pop()
    assert any("other than once" in v for v in violations(instance, RoutingResult(
        good.total_length, dropped, good.overflow_routes, good.vehicles)))

    doubled = [list(r) for r in good.routes]
    doubled[(busy + 1) % len(doubled)].append(doubled[busy][0])
    assert any("other than once" in v for v in violations(instance, RoutingResult(
        good.total_length, doubled, good.overflow_routes, good.vehicles)))

    merged = [list(r) for r in good.routes]
    others = [r for r in range(len(merged)) if r != busy and merged[r]]
    merged[busy] += merged[others[0]]
    merged[others[0]] = []
    assert any("carries" in v for v in violations(instance, RoutingResult(
        routes_length(instance["depot"], instance["coords"], merged), merged, good.overflow_routes, good.vehicles)))

    assert any("reported length" in v for v in violations(instance, RoutingResult(
        good.total_length * 1.001, good.routes, good.overflow_routes, good.vehicles)))

    needless = [list(r) for r in good.routes] + [[good.routes[busy][-1]]]
    needless[busy] = needless[busy][:-1]
    assert any("although a route had room" in v for v in violations(instance, RoutingResult(
        routes_length(instance["depot"], instance["coords"], needless), needless, 1, good.vehicles)))


# -- the reference and the metric ------------------------------------------------

@pytest.mark.parametrize("dataset", SUITE[::3], ids=lambda d: d.name)
def test_clarke_wright_is_feasible_and_never_worse_than_out_and_back(dataset):
    for instance in dataset.instances:
        routes = clarke_wright(instance["depot"], instance["coords"], instance["demands"], instance["capacity"])
        served = sorted(c for r in routes for c in r)
        assert served == list(range(instance["num_customers"]))
        assert all(instance["demands"][r].sum() <= instance["capacity"] for r in routes)
        length = routes_length(instance["depot"], instance["coords"], routes)
        assert length <= out_and_back_length(instance["depot"], instance["coords"]) + 1e-12
        assert length == pytest.approx(instance["reference_length"], rel=1e-12)


def test_clarke_wright_reference_is_stored_with_the_instance():
    instance = TASK.nominal_instances()[2]
    assert instance["reference_length"] == clarke_wright_length(
        instance["depot"], instance["coords"], instance["demands"], instance["capacity"])


def test_metric_is_route_length_over_the_reference():
    instance = TASK.nominal_instances()[1]
    result = simulate(instance, BASELINES["UW-Insert"])
    assert TASK.evaluate(BASELINES["UW-Insert"], instance) == pytest.approx(
        result.total_length / instance["reference_length"], rel=1e-15)
    # online insertion with a fixed fleet cannot beat the offline savings solution by much, if at all
    assert 0.9 < TASK.evaluate(BASELINES["UW-Insert"], instance) < 3.0


# -- baselines -------------------------------------------------------------------

def test_baselines_are_the_three_of_the_paper_and_distinct():
    assert set(BASELINES) == {"NF-Insert", "SP-Insert", "UW-Insert"}
    instances = [d.instances[0] for d in SUITE]
    metrics = {name: tuple(TASK.evaluate(h, inst) for inst in instances) for name, h in BASELINES.items()}
    assert len(set(metrics.values())) == 3


def test_baselines_are_deterministic():
    instance = SUITE[1].instances[0]
    for h in BASELINES.values():
        assert simulate(instance, h).routes == simulate(instance, h).routes


def test_baseline_formulas():
    features = np.array([0.1, 0.2, 0.25, 0.3, 0.5, 1.0])
    cands = np.array([[0, 0, 0.2, 0.5, 0.25, 0.02, 0.1, 0.1],
                      [0, 1, 0.1, 0.5, 0.25, 0.02, 0.1, 0.1],
                      [1, 0, 0.05, 0.2, 0.55, 0.04, 0.1, 0.1]])
    np.testing.assert_allclose(BASELINES["SP-Insert"](features, cands), -cands[:, 2] / (cands[:, 3] + 0.05))
    np.testing.assert_allclose(BASELINES["UW-Insert"](features, cands),
                               -cands[:, 2] * (1 + 0.25 / (1 - cands[:, 4])))
    nf = BASELINES["NF-Insert"](features, cands)
    assert int(np.argmax(nf)) == 1 and nf[2] == -np.inf


# -- instances -------------------------------------------------------------------

def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_suite_is_deterministic_with_fifteen_datasets_of_five():
    again = OVRPTask().test_suite()
    assert len(SUITE) == 15 and all(len(d.instances) == 5 for d in SUITE)
    assert sorted({(d.family, d.params["V"]) for d in SUITE}) == sorted(
        (f, v) for f in FAMILIES for v in (5, 10, 15))
    for d1, d2 in zip(SUITE, again):
        assert d1.name == d2.name and all(_same(a, b) for a, b in zip(d1.instances, d2.instances))
        assert all(inst["vehicles"] == d1.params["V"] for inst in d1.instances)


def test_nominal_set_is_deterministic_uniform_with_ten_vehicles():
    nominal, again = TASK.nominal_instances(), OVRPTask().nominal_instances()
    assert len(nominal) == 5 and all(_same(a, b) for a, b in zip(nominal, again))
    assert all(inst["vehicles"] == 10 for inst in nominal)
    demands = np.concatenate([inst["demands"] for inst in nominal])
    assert set(np.unique(demands)) <= set(range(1, 11)) and len(np.unique(demands)) == 10


def test_instances_are_plain_picklable_dicts():
    instance = SUITE[4].instances[3]
    assert _same(pickle.loads(pickle.dumps(instance)), instance)
    assert pickle.loads(pickle.dumps(TASK)) is TASK


def test_generated_instances_respect_the_spec_ranges():
    for dataset in SUITE:
        for inst in dataset.instances:
            assert inst["num_customers"] == 50 and inst["capacity"] == 40
            assert inst["coords"].shape == (50, 2)
            assert inst["coords"].min() >= 0.0 and inst["coords"].max() <= 1.0
            assert inst["demands"].dtype == np.int64
            assert inst["demands"].min() >= 1 and inst["demands"].max() <= 10
            assert sorted(inst["order"].tolist()) == list(range(50))
            np.testing.assert_array_equal(inst["depot"], [0.5, 0.5])


def test_families_shift_the_mean_demand():
    means = {f: np.mean([family_instance(f, 10, np.random.default_rng(i))["demands"].mean() for i in range(20)])
             for f in FAMILIES}
    assert means["lognormal"] < means["exponential"] < means["uniform"]
    assert 4.5 < means["normal"] < 5.5 and 5.0 < means["uniform"] < 6.0


def test_locations_are_clustered():
    # a two- or three-cluster mixture: points sit much closer to their nearest neighbour than uniform ones
    rng = np.random.default_rng(0)
    nn = []
    for _ in range(20):
        pts = make_instance(np.ones(50, dtype=int), rng)["coords"]
        d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1)) + np.eye(50) * 9
        nn.append(d.min(1).mean())
    assert np.mean(nn) < 0.5 / np.sqrt(50)  # uniform points in the unit square: about 0.5 / sqrt(n)


# -- the task protocol -----------------------------------------------------------

def test_task_is_registered_and_keeps_fifty_customers():
    assert isinstance(TASK, OVRPTask) and TASK.name == "ovrp"
    assert TASK.shift.cells == 10 and TASK.nominal_high == 10
    assert TASK.length_can_change is False and TASK.nominal_length == 50
    inst = TASK.sample_instance(np.full(10, 0.1), np.random.default_rng(0), length=55)
    assert inst["num_customers"] == 50 and inst["vehicles"] == 10
    assert TASK.sample_instance(np.full(10, 0.1), np.random.default_rng(0), V=5)["vehicles"] == 5


def test_histogram_and_sample_round_trip():
    instance = TASK.nominal_instances()[0]
    p = TASK.histogram(instance)
    assert p.shape == (10,) and p.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p, np.bincount(instance["demands"] - 1, minlength=10) / 50)
    spike = np.zeros(10)
    spike[6] = 1.0
    sampled = TASK.sample_instance(spike, np.random.default_rng(1))
    assert np.all(sampled["demands"] == 7)
    np.testing.assert_array_equal(TASK.histogram(sampled), spike)
    a = TASK.sample_instance(p, np.random.default_rng(5))
    b = TASK.sample_instance(p, np.random.default_rng(5))
    assert _same(a, b)


# -- failing heuristics ----------------------------------------------------------

def _raises(f, c):
    raise ValueError("boom")


def _nan(f, c):
    out = -c[:, 2].copy()
    out[0] = np.nan
    return out


def _wrong_shape(f, c):
    return np.zeros(len(c) + 1)


def _matrix(f, c):
    return c


def _strings(f, c):
    return np.array(["a"] * len(c))


def _all_minus_inf(f, c):
    return np.full(len(c), -np.inf)


def _plus_inf(f, c):
    out = -c[:, 2].copy()
    out[-1] = np.inf
    return out


def _none(f, c):
    return None


def _ragged(f, c):
    return [[1.0], [1.0, 2.0]] + [0.0] * (len(c) - 2)


def _scalar(f, c):
    return 1.0


def _float32_nan(f, c):
    return np.full(len(c), np.nan, dtype=np.float32)


def _later_raise(f, c):
    if f[4] > 0.5:  # progress: fails halfway, after some decisions were taken
        raise KeyError("late\nfailure")
    return -c[:, 2]


def _list_scores(f, c):
    return (-c[:, 2]).tolist()  # not an array but a valid one once converted


def _bool_scores(f, c):
    return c[:, 2] < np.median(c[:, 2])


def _int_scores(f, c):
    return (-1000 * c[:, 2]).astype(np.int32)


def _some_minus_inf(f, c):
    return np.where(c[:, 3] > 0.2, -c[:, 2], -np.inf) if np.any(c[:, 3] > 0.2) else -c[:, 2]


class _Sub(np.ndarray):
    pass


def _subclass(f, c):
    return (-c[:, 2]).view(_Sub)


@pytest.mark.parametrize("heuristic,reason", [
    (_raises, "raised ValueError: boom"), (_nan, "non-finite"), (_wrong_shape, "shape"),
    (_matrix, "shape"), (_strings, "dtype"), (_all_minus_inf, "non-finite")])
def test_failing_heuristics_get_an_invalid_score_with_a_reason(heuristic, reason):
    instance = TASK.nominal_instances()[0]
    with pytest.raises(HeuristicError, match=reason) as info:
        TASK.evaluate(heuristic, instance)
    assert "\n" not in str(info.value)
    evaluation = TASK.evaluation()
    assert evaluation.evaluate_program("", heuristic) is None
    assert reason.split(":")[0] in evaluation.last_error


@pytest.mark.parametrize("heuristic,reason", [
    (_raises, "raised ValueError: boom"), (_nan, "non-finite"), (_wrong_shape, "shape"),
    (_matrix, "shape"), (_strings, "dtype"), (_all_minus_inf, "non-finite"), (_plus_inf, "non-finite"),
    (_none, "shape"), (_ragged, "not an array"), (_scalar, "shape"), (_float32_nan, "non-finite"),
    (_later_raise, "raised KeyError: 'late")])
def test_failing_heuristics_get_the_same_reason_on_both_loops(heuristic, reason, compiled):
    reasons = []
    for instance in (TASK.nominal_instances()[0], SUITE[0].instances[0]):
        with pytest.raises(HeuristicError, match=reason) as info:
            simulate(instance, heuristic, compiled=compiled)
        assert "\n" not in str(info.value)
        with pytest.raises(HeuristicError) as python:
            simulate(instance, heuristic, compiled=False)
        reasons.append((str(info.value), str(python.value)))
    assert all(ours == theirs for ours, theirs in reasons)


@pytest.mark.parametrize("heuristic", [_list_scores, _bool_scores, _int_scores, _some_minus_inf, _subclass],
                         ids=lambda h: h.__name__)
def test_scores_of_other_accepted_forms_pick_the_same_insertions(heuristic, compiled):
    for instance in (TASK.nominal_instances()[1], SUITE[3].instances[2]):
        result = simulate(instance, heuristic, compiled=compiled)
        assert violations(instance, result) == []
        assert result == simulate(instance, heuristic, compiled=False)


def test_evaluation_scores_a_baseline_as_minus_the_mean_ratio():
    evaluation = TASK.evaluation()
    h = BASELINES["SP-Insert"]
    expected = -np.mean([TASK.evaluate(h, inst) for inst in TASK.nominal_instances()])
    assert evaluation.evaluate_program("", h) == pytest.approx(expected)


def test_template_program_runs_and_names_every_feature_and_column():
    namespace: dict = {}
    exec(TASK.template_program, namespace)
    assert TASK.evaluate(namespace["priority"], TASK.nominal_instances()[0]) > 0
    for name in ("route_id", "position", "delta_distance", "residual_capacity", "current_load", "route_size",
                 "customer_dist", "projected_route", "progress", "fleet slack", "demand / vehicle capacity Q"):
        assert name in TASK.template_program


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 150), st.sampled_from([1.0, 100.0, 1e4]), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_distances_are_scipy_s_cdist_bit_for_bit(customers, scale, seed, rounded):
    """OVRP's distances are numpy's, so that a program's process does not load scipy's linear algebra
    (docs/engine.md): they must be the very bits cdist gave, or every recorded route length moves."""
    from scipy.spatial.distance import cdist

    from tasks.ovrp.reference import distance_matrix

    rng = np.random.default_rng(seed)
    depot, coords = rng.random(2) * scale, rng.random((customers, 2)) * scale
    if rounded:
        depot, coords = np.round(depot, 3), np.round(coords, 3)
    points = np.vstack([depot[None, :], coords])
    assert np.array_equal(distance_matrix(depot, coords), cdist(points, points))
