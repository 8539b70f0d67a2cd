"""Compute accounting of a robust run: outer + inner + re-score add up to every evaluation."""
from __future__ import annotations

import json

from llm4ad.method.eoh import EoH

from robust_helpers import ScriptedLLM, small_obp_evaluation
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust import robust
from raise_plugin.rundir.writer import RunDirectory


def test_outer_inner_and_rescore_add_up(tmp_path):
    callback = AdversarialInstanceCallback(0.005, tau=1, inner_population=4, inner_generations=2, seed=3)
    recorder = RunDirectory(tmp_path)
    method = robust(EoH)(llm=ScriptedLLM(1), evaluation=small_obp_evaluation(), max_sample_nums=24, pop_size=4,
                         max_generations=None, callbacks=[callback], seed=1, recorder=recorder)
    method.run()
    c = method.compute()
    assert callback.refreshes >= 2
    # the inner searches: every candidate instance the GA evaluated, and the references (the task's
    # baselines, run on each returned instance to record its regret), as each search reported them
    assert c["inner_evaluations"] == sum(h["inner_evaluations"] + h["reference_evaluations"]
                                         for h in callback.history) > 0
    assert all(h["reference_evaluations"] > 0 for h in callback.history)
    assert c["inner_seconds"] > 0
    # re-scoring: one new instance per member per refresh (the cache spares the rest)
    assert c["rescore_evaluations"] == sum(h["evaluations"] for h in callback.history) > 0
    # every program-instance evaluation of the evaluator is either outer or re-scoring
    assert c["outer_evaluations"] + c["rescore_evaluations"] == method.evaluations
    assert c["total_evaluations"] == c["outer_evaluations"] + c["inner_evaluations"] + c["rescore_evaluations"]
    share = (c["inner_evaluations"] + c["rescore_evaluations"]) / c["total_evaluations"]
    assert abs(c["inner_loop_share_evaluations"] - share) < 1e-12
    assert 0 < c["inner_loop_share_seconds"] < 1
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["compute"]["total_evaluations"] == c["total_evaluations"]


def test_parallel_re_scoring_counts_the_wall_time_of_the_batch_not_the_sum_of_its_calls():
    """Re-scoring spreads the members over the workers; the seconds it adds to ``rescore`` are
    the batch's wall time (as a sample's breakdown in ``time_per_sample`` needs), so they can
    never exceed the time the batch took. Four programs, two at a time, each call 0.3 s: the
    calls' sum (1.2 s) would be about twice the wall time."""
    import time

    from raise_plugin.robust.evaluator import InstanceSetEvaluator
    from raise_plugin.robust.instances import RunInstanceSet
    from raise_plugin.robust.scores import ScoreBook
    from tasks import get_task

    evaluation = small_obp_evaluation(count=2, num_items=50, safe_evaluate=False)
    instance_set = RunInstanceSet(evaluation, list(evaluation.instances))
    evaluator = InstanceSetEvaluator(get_task("obp"), evaluation, ScoreBook(), instance_set)
    in_thread = evaluator._runner

    class TwoAtATime:
        width = 2

        def run(self, *args):
            time.sleep(0.3)
            return in_thread.run(*args)

    evaluator._runner = TwoAtATime()
    book = evaluator._book
    records = [book.record(f"def priority(item, bins):\n    return -(bins - item) + {k}\n") for k in range(4)]
    entries, _ = instance_set.state()
    started = time.perf_counter()
    evaluator.score_each(records, entries)
    wall = time.perf_counter() - started
    count, seconds = evaluator.counts()["rescore"]
    assert count == 4 * len(entries)
    assert all(set(r.metrics) == {e.instance_id for e in entries} for r in records)
    assert 0.6 <= seconds <= wall
    # one at a time (one worker), the calls' times add up as before
    in_thread_evaluator = InstanceSetEvaluator(get_task("obp"), evaluation, ScoreBook(), instance_set)
    in_thread_evaluator.score_each([in_thread_evaluator._book.record(records[0].text)], entries)
    assert in_thread_evaluator.counts()["rescore"][0] == len(entries)
