"""Exact early rejection: a candidate's evaluation stops once it provably cannot enter the
population, and the run is otherwise the run without it (samples, populations, re-scores,
instances and best), with fewer outer instance evaluations."""
from __future__ import annotations

import math

import numpy as np
import pytest
from llm4ad.method.eoh import EoH

from robust_helpers import ScriptedLLM, fake_search, small_obp_evaluation
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.config import RunConfig
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.rundir.writer import RunDirectory
from raise_plugin.runner import resume_run, start_run
from raise_plugin.robust import robust
from tasks.common.aggregation import Aggregation

RobustEoH = robust(EoH)
SAME = ("sample", "program_id", "joined", "duplicate", "instance_set", "generation", "function")
EXACT = ("score", "metrics", "failed_on", "error", "broken")


# -- the bound ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["min", "cvar:0.5", "cvar:0.2", "cvar:1"])
def test_the_bound_from_part_of_the_set_is_never_below_the_score(spec):
    aggregation = Aggregation.parse(spec)
    rng = np.random.default_rng(0)
    for _ in range(400):
        n = int(rng.integers(1, 13))
        evals = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # ties too
        full = aggregation(evals)
        known = rng.permutation(n)[:int(rng.integers(1, n + 1))]
        assert aggregation.upper_bound(evals[known], n) >= full
        assert aggregation.upper_bound(evals, n) == full  # the whole set: the score itself


@pytest.mark.parametrize("spec", ["mean", "balanced", "balanced:0.3", "regret:mean"])
def test_mean_and_balanced_give_no_bound(spec):
    aggregation = Aggregation.parse(spec)
    assert not aggregation.bounded
    assert aggregation.upper_bound([-5.0, -7.0], 3) == math.inf


def test_regret_forms_of_min_and_cvar_are_bounded():
    assert Aggregation.parse("regret:bestfit:min").bounded and Aggregation.parse("regret:cvar:0.3").bounded


def _evaluator(instances):
    from raise_plugin.robust.evaluator import InstanceSetEvaluator
    from raise_plugin.robust.instances import RunInstanceSet
    from raise_plugin.robust.scores import ScoreBook
    from tasks import get_task

    evaluation = get_task("obp").evaluation(instances=instances, aggregation="min", safe_evaluate=False)
    instance_set = RunInstanceSet(evaluation, instances)
    return InstanceSetEvaluator(get_task("obp"), evaluation, ScoreBook(), instance_set), instance_set


def test_a_stop_is_before_the_end_of_the_order_a_candidate_that_meets_it_all_is_scored():
    """Under min, best fit's score falls to the bound at its worst instance. Met first, that is a
    stop: counted, two evaluations saved, the bound's score. Met last, the candidate has met the
    whole set: its score, and no stop counted (it was counted, with nothing saved, and the run's
    summary then named more candidates stopped early than its samples recorded)."""
    from robust_helpers import weibull_instances

    text = "def priority(item, bins):\n    return -(bins - item)\n"
    instances = weibull_instances(count=3, num_items=60)
    probe, probe_set = _evaluator(instances)
    rec = probe._book.record(text)
    full = probe.score_on(rec, probe_set.state()[0])
    metrics = [rec.metrics[e.instance_id] for e in probe_set.state()[0]]
    worst = int(np.argmax(metrics))
    assert sorted(metrics)[-1] > sorted(metrics)[-2]  # one worst instance: every shorter prefix stays above it
    others = [inst for i, inst in enumerate(instances) if i != worst]
    for order, stopped in (([instances[worst], *others], True), ([*others, instances[worst]], False)):
        evaluator, instance_set = _evaluator(order)
        entries, version = instance_set.state()
        rec = evaluator._book.record(text)
        score = evaluator.score_or_reject(rec, entries, version, bound=full)
        assert score == full
        assert (rec.rejection is not None, evaluator.rejected, evaluator.saved) == ((True, 1, 2) if stopped else
                                                                                   (False, 0, 0))
        assert len(rec.metrics) == (1 if stopped else 3)


# -- whole runs, with and without ------------------------------------------------------------
def _run(out, aggregation: str, early_reject: bool, budget: int = 16):
    callback = AdversarialInstanceCallback(epsilon=0.002, tau=1, searcher=fake_search, inner_population=3,
                                           aggregation=aggregation)
    evaluation = small_obp_evaluation(count=6, aggregation=aggregation)  # A is the evaluation's
    method = RobustEoH(llm=ScriptedLLM(0, fail_every=9), evaluation=evaluation,
                       max_sample_nums=budget, pop_size=4, max_generations=None, callbacks=[callback],
                       recorder=RunDirectory(out), seed=0, early_reject=early_reject)
    method.run()
    return method


def _records(out) -> dict:
    index = read_jsonl(out / "instances" / "index.jsonl")
    for line in index:
        (line.get("provenance") or {}).pop("search_seconds", None)
    return {"samples": read_jsonl(out / "samples.jsonl"), "populations": read_jsonl(out / "population.jsonl"),
            "scores": read_jsonl(out / "scores.jsonl"), "index": index}


def assert_same_run(on: dict, off: dict) -> int:
    """Everything equal, except what a sample stopped early records: at most the admission bound,
    at least its full score, and the metrics it met (equal to the full run's). Returns how many."""
    assert len(on["samples"]) == len(off["samples"])
    rejected = 0
    for a, b in zip(on["samples"], off["samples"]):
        assert {k: a.get(k) for k in SAME} == {k: b.get(k) for k in SAME}
        if not a.get("rejected"):
            assert {k: a.get(k) for k in EXACT} == {k: b.get(k) for k in EXACT}, a["sample"]
            continue
        rejected += 1
        full = -math.inf if b["score"] is None else b["score"]
        assert full <= a["score"] <= a["admission_bound"]
        met = {k: v for k, v in a["metrics"].items() if v is not None}
        assert met and len(met) < len(a["metrics"])
        if b["score"] is not None:
            assert all(b["metrics"][k] == v for k, v in met.items())
        assert not a["failed_on"] and a["error"] is None
    assert on["populations"] == off["populations"]
    assert on["scores"] == off["scores"]
    assert on["index"] == off["index"]
    return rejected


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    made = {}

    def get(aggregation: str, early_reject: bool):
        key = (aggregation, early_reject)
        if key not in made:
            out = tmp_path_factory.mktemp("runs") / f"{aggregation.replace(':', '_')}-{early_reject}"
            method = _run(out, aggregation, early_reject)
            made[key] = (_records(out), method.summary())
        return made[key]
    return get


@pytest.mark.parametrize("aggregation", ["min", "regret:bestfit:min", "cvar:0.5"])
def test_a_run_with_early_rejection_is_the_run_without(runs, aggregation):
    (on, on_summary), (off, off_summary) = runs(aggregation, True), runs(aggregation, False)
    rejected = assert_same_run(on, off)
    assert rejected > 0
    assert on_summary["best"] == off_summary["best"]
    assert on_summary["early_rejection"] == "on" and off_summary["early_rejection"] == "off"
    assert on_summary["compute"]["rejected_early"] == rejected


@pytest.mark.parametrize("aggregation", ["min", "regret:bestfit:min"])
def test_early_rejection_makes_fewer_outer_evaluations(runs, aggregation):
    (_, on), (_, off) = runs(aggregation, True), runs(aggregation, False)
    assert on["compute"]["outer_evaluations"] < off["compute"]["outer_evaluations"]
    assert on["compute"]["evaluations_saved"] > 0
    assert "rejected_early" not in off["compute"]


def test_under_mean_every_candidate_meets_the_whole_set(tmp_path):
    method = _run(tmp_path / "mean", "mean", True, budget=12)
    summary = method.summary()
    assert summary["early_rejection"].startswith("no bound")
    assert "rejected_early" not in summary["compute"]
    assert not any(s.get("rejected") for s in read_jsonl(tmp_path / "mean" / "samples.jsonl"))


# -- through the runner: OBP's defaults (on OVRP, whose evaluations take milliseconds), resume, the
# incumbent shapes --------------------------------------------------------------------------
def _config(out, **kw) -> RunConfig:
    base = dict(task="ovrp", robust=True, budget=16, pop_size=4, tau=1, nominal=2, seed=0, out=str(out),
                adversary_objective="regret:SP-Insert", aggregation="regret:SP-Insert:min",
                inner_population=4, inner_generations=1, validation_trace=False, host_profiler=False)
    return RunConfig(**{**base, **kw})


@pytest.mark.slow
def test_a_run_capped_mid_generation_and_resumed_is_the_uninterrupted_run(tmp_path, full_size):
    # 12 samples in generations of 4 after the first 4: capped at 10, samples 9 and 10 are pending;
    # at full size the resumed run is also held against the run without early rejection
    start_run(_config(tmp_path / "whole", budget=12)).run()
    if full_size:
        start_run(_config(tmp_path / "off", budget=12, early_reject=False)).run()
    capped = start_run(_config(tmp_path / "capped", budget=12, max_llm_calls=10))
    capped.run()
    pending = [s for s in read_jsonl(tmp_path / "capped" / "samples.jsonl") if s["sample"] > 8]
    assert any(s.get("rejected") for s in pending)  # a rejected sample was pending at the stop
    resume_run(tmp_path / "capped", max_llm_calls=100).run()
    whole, resumed = _records(tmp_path / "whole"), _records(tmp_path / "capped")
    strip = lambda s: {k: v for k, v in s.items() if k not in ("sample_time", "evaluate_time", "cursor")}
    assert [strip(s) for s in resumed["samples"]] == [strip(s) for s in whole["samples"]]
    assert resumed["populations"] == whole["populations"]
    if full_size:
        assert assert_same_run(resumed, _records(tmp_path / "off")) > 0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["hillclimb", "randsample"])
def test_an_incumbent_run_with_early_rejection_is_the_run_without(tmp_path, method):
    summaries = {}
    for flag in (True, False):
        run = start_run(_config(tmp_path / str(flag), method=method, budget=8, aggregation="min",
                                early_reject=flag))
        run.run()
        summaries[flag] = run.summary()
    rejected = assert_same_run(_records(tmp_path / "True"), _records(tmp_path / "False"))
    assert rejected > 0 and rejected == summaries[True]["compute"]["rejected_early"]
    assert summaries[True]["best"] == summaries[False]["best"]


def test_funsearch_says_every_sample_meets_the_whole_set(tmp_path):
    from llm4ad.method.funsearch import FunSearch
    from tasks import get_task
    method = robust(FunSearch)(llm=ScriptedLLM(0), evaluation=get_task("obp").evaluation(aggregation="min"),
                               max_sample_nums=4)
    assert method.early_rejection.startswith("every valid sample enters an island")
