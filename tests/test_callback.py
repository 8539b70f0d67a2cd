"""AdversarialInstanceCallback on a short robust EoH run: when it fires, what it adds, how it re-scores."""
from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pytest
from llm4ad.method.eoh import EoH

from robust_helpers import ScriptedLLM, fake_search, small_obp_evaluation
from raise_plugin.adversary.adversary_config import AdversaryConfig, AdversaryConfigError
from raise_plugin.commands.run import print_summary
from raise_plugin.config import AdversarySettings, InnerSearchSettings
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust.hooks import Callback, RunSnapshot
from raise_plugin.programs import compile_priority
from raise_plugin.robust import robust
from tasks import get_task


class Recorder(Callback):
    """Keeps what every hook saw, and checks every score against a fresh evaluation after each refresh."""

    def __init__(self, aggregation="mean"):
        self.events: list[tuple] = []
        self.samples: list = []
        self.updates: list = []
        self.mismatches: list = []
        self.checked = 0
        self.aggregation = aggregation

    def on_run_start(self, method, snapshot):
        self.events.append(("start", snapshot.samples))

    def on_sample_evaluated(self, method, snapshot, sample):
        self.samples.append((sample.sample, sample.program.program_id, sample.program.score))

    def on_generation_end(self, method, snapshot):
        self.events.append(("generation", snapshot.generation, snapshot.samples, snapshot.instance_set_size))

    def on_instances_updated(self, method, snapshot, update):
        self.updates.append((snapshot.generation, update))
        fresh_eval = get_task("obp").evaluation(instances=[e.instance for e in method.instance_entries()],
                                                aggregation=self.aggregation)
        fresh_eval.nominal_count = sum(e.origin == "nominal" for e in method.instance_entries())
        for p in snapshot.population + snapshot.pending:
            code = method.program_text(p.program_id)
            fresh = fresh_eval.evaluate_program(code, compile_priority(code))
            fresh = float("-inf") if fresh is None else fresh
            self.checked += 1
            if not (fresh == p.score or (p.score == float("-inf") and self._is_duplicate(snapshot, p))):
                self.mismatches.append((p.program_id, p.score, fresh))

    @staticmethod
    def _is_duplicate(snapshot, p):
        members = snapshot.population + snapshot.pending
        return sum(q.program_id == p.program_id for q in members) > 1

    def on_run_end(self, method, snapshot):
        self.events.append(("end", snapshot.samples))


def robust_run(budget=40, pop_size=4, tau=2, seed=0, aggregation="mean", max_adversarial=10, samplers=1,
               llm=None, searcher=fake_search, adversary_objective="metric", inner_draws=None,
               tau_unit="generations", instances_per_refresh="one", **kwargs):
    rec = Recorder(aggregation)
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=tau, inner_population=4, inner_generations=2,
                                     aggregation=aggregation, max_adversarial=max_adversarial, seed=seed,
                                     searcher=searcher, adversary_objective=adversary_objective,
                                     inner_draws=inner_draws, tau_unit=tau_unit,
                                     instances_per_refresh=instances_per_refresh)
    method = robust(EoH, callbacks=[cb, rec])(
        llm=llm or ScriptedLLM(seed), evaluation=small_obp_evaluation(aggregation=aggregation), max_sample_nums=budget,
        pop_size=pop_size, max_generations=None, num_samplers=samplers, seed=seed, **kwargs)
    method.run()
    return method, cb, rec


def test_inner_loop_fires_every_tau_generations_and_run_stops_at_budget():
    method, cb, rec = robust_run(budget=40, pop_size=4, tau=3)
    generations = [e[1] for e in rec.events if e[0] == "generation"]
    assert generations == list(range(1, generations[-1] + 1))
    assert [g for g, _ in rec.updates] == [g for g in generations if g % 3 == 0]
    assert cb.refreshes == len(rec.updates) >= 3
    assert method.samples == method._tot_sample_nums == 40
    assert [s[0] for s in rec.samples] == list(range(1, 41))
    assert rec.events[0] == ("start", 0) and rec.events[-1] == ("end", 40)
    assert method._stale_samples == 0 and method.hook_errors == 0  # one sampler: never a stale score


def test_same_seed_same_run_with_the_real_adversary():
    a, cb_a, rec_a = robust_run(budget=16, seed=5, searcher=None)
    b, cb_b, rec_b = robust_run(budget=16, seed=5, searcher=None)
    assert cb_a.refreshes >= 1
    assert rec_a.samples == rec_b.samples
    assert [e.instance_id for e in a.instance_set] == [e.instance_id for e in b.instance_set]


def test_a_failing_callback_is_logged_and_counted_not_swallowed(caplog):
    class Broken(Callback):
        def on_generation_end(self, method, snapshot):
            raise RuntimeError("boom")

    method2 = robust(EoH, callbacks=[Broken()])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(),
                                                max_sample_nums=12, pop_size=4, max_generations=None)
    method2.run()
    assert method2.samples == 12 and method2.hook_errors >= 2
    assert "Broken.on_generation_end failed" in caplog.text


def test_instance_set_grows_and_keeps_a_window_of_adversarial_instances():
    method, cb, rec = robust_run(budget=40, pop_size=4, tau=2, max_adversarial=2)
    sizes = [u.version for _, u in rec.updates]
    assert sizes == list(range(1, len(sizes) + 1))
    origins = [e.origin for e in method.instance_set]
    assert origins == ["nominal"] * 3 + ["adversarial"] * 2
    kept = [e.instance_id.rsplit("-", 1)[0] for e in method.instance_set[3:]]
    assert kept == [f"adv-{cb.refreshes - 1}", f"adv-{cb.refreshes}"]
    assert all(len(u.dropped) == (1 if u.version > 2 else 0) for _, u in rec.updates)


@pytest.mark.parametrize("aggregation", ["mean", "min", "cvar:0.5", "balanced", "balanced:0.8", "regret:min",
                                         "regret:cvar:0.5", "regret:bestfit:min"])
def test_scores_after_a_refresh_equal_a_fresh_evaluation_on_the_new_set(aggregation):
    method, cb, rec = robust_run(budget=20, pop_size=4, tau=2, aggregation=aggregation)
    assert rec.updates and rec.checked >= 4 * len(rec.updates)
    assert rec.mismatches == []
    # the cache saves work: a refresh evaluates only the new instance for each member
    for _, update in rec.updates:
        assert update.evaluations <= len(update.rescored)


def test_refresh_uses_the_real_adversary_on_the_current_best():
    method, cb, rec = robust_run(budget=16, pop_size=4, tau=2, searcher=None)
    assert cb.refreshes >= 1
    added = method.instance_entries()[-1]
    assert added.origin == "adversarial"
    assert added.distance <= 0.002 + 1e-9
    assert method.program_text(added.provenance["program_id"]).strip()  # the attacked program is on record
    assert rec.mismatches == []


def test_same_seed_same_run_with_one_sampler():
    a, _, rec_a = robust_run(budget=28, seed=3)
    b, _, rec_b = robust_run(budget=28, seed=3)
    assert rec_a.samples == rec_b.samples
    assert [e.instance_id for e in a.instance_set] == [e.instance_id for e in b.instance_set]
    assert a.snapshot().population == b.snapshot().population


def test_callback_state_round_trips():
    _, cb, _ = robust_run(budget=20, pop_size=4, tau=2)
    other = AdversarialInstanceCallback(epsilon=0.002, tau=2)
    other.load_state_dict(cb.state_dict())
    assert other.state_dict() == cb.state_dict()
    assert other.refreshes == cb.refreshes and other.last_refresh_generation == cb.last_refresh_generation


@pytest.mark.parametrize("kwargs, field", [({"epsilon": -1}, "epsilon"), ({"epsilon": 0}, "epsilon"),
                                          ({"epsilon": float("nan")}, "epsilon"),
                                          ({"epsilon": 0.1, "tau": 0}, "tau"),
                                          ({"epsilon": 0.1, "max_adversarial": 0}, "max_adversarial"),
                                          ({"epsilon": 0.1, "inner_population": 1}, "inner_population"),
                                          ({"epsilon": 0.1, "aggregation": "median"}, "aggregation"),
                                          ({"epsilon": 0.1, "aggregation": "balanced:2"}, "aggregation"),
                                          ({"epsilon": 0.1, "draws": 0}, "draws"),
                                          ({"epsilon": 0.1, "objective": "regret:nope:x"}, "objective"),
                                          ({"epsilon": 0.1, "objective": "regret:"}, "objective"),
                                          ({"epsilon": 0.1, "aggregation": "regret:bestfit"}, "aggregation"),
                                          ({"epsilon": 0.1, "objective": "regret:population:0"}, "objective"),
                                          ({"epsilon": 0.1, "projection": "cube"}, "projection"),
                                          ({"epsilon": 0.1, "encoding": "bits"}, "encoding"),
                                          ({"epsilon": 0.1, "tau_unit": "weeks"}, "tau_unit")])
def test_bad_callback_arguments_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        AdversarialInstanceCallback(**kwargs)


def test_snapshots_are_frozen():
    method, _, _ = robust_run(budget=12, pop_size=4, tau=5)
    snap = method.snapshot()
    assert isinstance(snap, RunSnapshot)
    with pytest.raises(Exception):
        snap.generation = 99  # type: ignore[misc]
    assert snap.best is not None and math.isfinite(snap.best.score)
    assert isinstance(snap.population, tuple)


def test_base_callback_hooks_do_nothing():
    cb = Callback()
    assert cb.state_dict() == {}
    assert cb.on_generation_end(None, None) is None


def _run_with_searcher(searcher, budget=12, **kwargs):
    callback = AdversarialInstanceCallback(0.002, tau=1, searcher=searcher, **kwargs)
    method = robust(EoH)(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=budget,
                         pop_size=4, max_generations=None, callbacks=[callback])
    method.run()
    return method, callback


def test_an_inner_search_that_hangs_is_skipped_and_the_run_goes_on():
    from robust_helpers import hanging_search

    method, callback = _run_with_searcher(hanging_search, search_timeout=0.5)
    assert method.samples == 12 and method.hook_errors == 0
    assert callback.refreshes == 0 and len(callback.skipped) >= 2
    assert all("exceeded 0.5 s" in s["reason"] for s in callback.skipped)
    assert len(method.instance_entries()) == len(method.nominal_instances())
    # the summary says so (it was only in the checkpoint: a run that trained as a plain one looked robust)
    summary = method.summary(finished=True)
    assert summary["refreshes"] == 0 and summary["refreshes_skipped"] == callback.skipped
    printed = io.StringIO()
    print_summary(summary, Path("run"), out=printed)
    assert (f"skipped         {len(callback.skipped)} refreshes whose inner search failed, the run trained without "
            "their instances: the inner search exceeded 0.5 s") in printed.getvalue()


def test_the_summary_says_when_a_callback_s_hook_raised(tmp_path):
    # a refresh that raised (OverflowError at G_in = 10^8) was counted in summary.json alone: the run
    # printed "refreshes 0" and nothing of why
    class Failing(Callback):
        def on_generation_end(self, method, snapshot):
            raise RuntimeError("boom")

    method = robust(EoH)(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8, pop_size=4,
                         max_generations=None, callbacks=[Failing()])
    method.run()
    summary = method.summary(finished=True)
    assert summary["hook_errors"] >= 1
    printed = io.StringIO()
    print_summary(summary, tmp_path, out=printed)
    assert (f"callback errors {summary['hook_errors']} calls of a callback's hook raised and were passed over "
            "(their tracebacks: on stderr)\n") in printed.getvalue()
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "run_log.txt").write_text("")  # a run the host's profiler logged
    printed = io.StringIO()
    print_summary(summary, tmp_path, out=printed)
    assert f"(their tracebacks: {tmp_path / 'host' / 'run_log.txt'})\n" in printed.getvalue()


def test_an_inner_search_past_the_memory_cap_costs_one_refresh_not_the_run():
    from robust_helpers import hoarding_search

    method, callback = _run_with_searcher(hoarding_search, search_timeout=30)
    assert method.samples == 12 and method.hook_errors == 0
    assert callback.refreshes == 0 and len(callback.skipped) >= 2
    assert all("memory" in s["reason"] for s in callback.skipped), callback.skipped


def test_the_inner_search_sees_no_secret_of_the_environment(monkeypatch):
    from robust_helpers import secret_seeing_search

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-generated-code")
    method, callback = _run_with_searcher(secret_seeing_search, search_timeout=30)
    assert method.hook_errors == 0 and callback.refreshes >= 2, callback.skipped


@pytest.mark.parametrize("kwargs, field", [({"adversary_objective": "regret:worstfit"}, "adversary_objective"),
                                           ({"aggregation": "regret:worstfit:min"}, "aggregation")])
def test_a_baseline_the_task_does_not_have_fails_when_the_method_is_made(kwargs, field):
    callback = AdversarialInstanceCallback(epsilon=0.002, tau=2, **kwargs)
    with pytest.raises(AdversaryConfigError, match=f"^{field}: task 'obp' has no classical baseline 'worstfit' "
                                                   r"\(it has: BestFit, FirstFit\)"):
        robust(EoH, callbacks=[callback])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8,
                                          pop_size=4, max_generations=None)


def test_an_eps_beyond_the_tasks_reach_fails_when_the_method_is_made_as_it_does_for_a_run():
    # the Python API's callback is checked as a run's settings are (``raise_plugin.resolve``): an eps the
    # projected inner search can never reach fails before a sample, not after the budget is spent
    callback = AdversarialInstanceCallback(epsilon=5.0, tau=2)
    with pytest.raises(AdversaryConfigError, match="^epsilon: 5 is beyond the largest distance obp's distributions "
                                                   r"can reach from its nominal histograms \(\d"):
        robust(EoH, callbacks=[callback])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8,
                                          pop_size=4, max_generations=None)
    unheld = AdversarialInstanceCallback(epsilon=5.0, tau=2, constraint="none")  # not held within eps: no reach
    robust(EoH, callbacks=[unheld])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8,
                                    pop_size=4, max_generations=None)


def test_the_evaluation_holds_the_aggregation_and_the_callback_only_checks_it():
    method, _, _ = robust_run(budget=8, pop_size=4, tau=2, aggregation="min")
    assert str(method.evaluation.aggregation) == "min"
    callback = AdversarialInstanceCallback(epsilon=0.002, tau=2, aggregation="min")
    with pytest.raises(ValueError, match="^aggregation: the evaluation aggregates by mean, this callback's"):
        robust(EoH, callbacks=[callback])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8,
                                          pop_size=4, max_generations=None)


@pytest.mark.parametrize("kwargs, said", [  # each was let through (a refresh then failed), or a bare ValueError
    ({"seed": -1}, "seed: must be >= 0, got -1"), ({"seed": "x"}, "seed: must be an integer, got 'x'"),
    ({"seed": 1.5}, "seed: must be an integer, got 1.5"),
    ({"search_timeout": -1}, "search_timeout: must be >= 0 seconds, got -1"),
    ({"search_timeout": float("nan")}, "search_timeout: must be a finite number, got nan"),
    ({"search_timeout": "x"}, "search_timeout: must be a finite number, got 'x'"),
    ({"searcher": 42}, "searcher: must be a function with raise_plugin.adversary.search's signature")])
def test_seed_search_timeout_and_searcher_are_checked_when_the_callback_is_made(kwargs, said):
    with pytest.raises(AdversaryConfigError, match=f"^{re.escape(said)}") as caught:
        AdversarialInstanceCallback(0.002, **kwargs)
    assert isinstance(caught.value, ValueError) and "\n" not in str(caught.value)


@pytest.mark.parametrize("objective", ["metric", "regret:baselines", "regret:population:2", "regret:bestfit"])
def test_every_adversarial_instance_records_objective_metric_reference_and_regret(objective):
    method, cb, rec = robust_run(budget=16, pop_size=4, tau=2, searcher=None, adversary_objective=objective, inner_draws=2)
    assert cb.refreshes >= 1 and method.hook_errors == 0
    for entry in method.instance_entries():
        if entry.origin != "adversarial":
            continue
        prov = entry.provenance
        assert prov["objective"] == objective and prov["draws"] == 2
        assert prov["regret"] == pytest.approx(prov["metric"] - prov["reference_metric"])
        if objective == "regret:population:2":
            assert prov["reference"] in prov["references"] and len(prov["references"]) <= 2
            assert prov["program_id"] not in prov["references"]
        elif objective == "regret:bestfit":  # one rule: the reference is BestFit on every instance
            assert prov["references"] == ["BestFit"] and prov["reference"] == "BestFit"
            task = get_task("obp")
            assert prov["reference_metric"] == task.evaluate(task.baselines["BestFit"], entry.instance)
        else:
            assert set(prov["references"]) == set(get_task("obp").baselines)
        assert prov["reference_evaluations"] > 0
    # the references' evaluations are part of the inner loop's count
    compute = method.compute()
    inner = sum(h["inner_evaluations"] + h["reference_evaluations"] for h in cb.history)
    assert compute["inner_evaluations"] == inner


@pytest.mark.parametrize("objective", ["metric", "regret:baselines"])
def test_a_refresh_can_add_every_draw_each_with_its_own_provenance(objective):
    method, cb, rec = robust_run(budget=16, pop_size=4, tau=2, searcher=None, adversary_objective=objective, inner_draws=3,
                                 instances_per_refresh="draws", max_adversarial=30)
    adversarial = [e for e in method.instance_entries() if e.origin == "adversarial"]
    assert cb.refreshes >= 1 and method.hook_errors == 0 and len(adversarial) == 3 * cb.refreshes
    task = get_task("obp")
    for k in range(1, cb.refreshes + 1):
        mine = [e for e in adversarial if e.provenance["refresh"] == k]
        assert [e.provenance["draw"] for e in mine] == [0, 1, 2]
        assert [e.instance_id.rsplit("-", 1)[0] for e in mine] == [f"adv-{k}.{d}" for d in range(3)]
        assert len({e.provenance["draw_seed"] for e in mine}) == 3  # three different instances of one distribution
        attacked = compile_priority(method.program_text(mine[0].provenance["program_id"]))
        for e in mine:
            assert e.provenance["metric"] == task.evaluate(attacked, e.instance)
            assert e.provenance["regret"] == pytest.approx(e.provenance["metric"] - e.provenance["reference_metric"])
    assert rec.mismatches == []
    # the one-instance refresh adds one of these draws: the same first refresh, seed for seed
    one, cb_one, _ = robust_run(budget=16, pop_size=4, tau=2, searcher=None, adversary_objective=objective, inner_draws=3)
    first = next(e for e in one.instance_entries() if e.origin == "adversarial")
    assert first.instance_id.rsplit("-", 1)[1] in {e.instance_id.rsplit("-", 1)[1] for e in adversarial
                                                   if e.provenance["refresh"] == 1}


def test_bad_per_refresh_names_the_field():
    with pytest.raises(ValueError, match="instances_per_refresh"):
        AdversarialInstanceCallback(epsilon=0.01, instances_per_refresh="all")


@pytest.mark.parametrize("old, new", [("objective", "adversary_objective"), ("draws", "inner_draws"),
                                      ("per_refresh", "instances_per_refresh"), ("population", "inner_population")])
def test_an_old_keyword_is_told_its_settings_name(old, new):
    with pytest.raises(ValueError, match=f"^{old}: is now {new}, the setting's name$"):
        AdversarialInstanceCallback(epsilon=0.01, **{old: 2})


def test_objective_text_round_trips():
    from raise_plugin.adversary.objective import parse_objective
    for text in ("metric", "regret:baselines", "regret:population", "regret:population:5"):
        assert str(parse_objective(text)) == (text if text != "regret:population" else "regret:population")
    assert parse_objective("regret:population").members == 3


def test_tau_in_samples_refreshes_at_the_first_generation_end_after_each_multiple():
    method, cb, rec = robust_run(budget=48, pop_size=4, tau=10, tau_unit="samples")
    refreshed = [snapshot_gen for snapshot_gen, _ in rec.updates]
    samples_at = {e[1]: e[2] for e in rec.events if e[0] == "generation"}
    # generations end every 4 samples; multiples of 10 are crossed at 12, 20, 32, 40
    assert [samples_at[g] for g in refreshed] == [12, 20, 32, 40]
    assert cb.state_dict()["last_refresh_samples"] == 40


def test_the_callback_reads_its_settings_from_its_config_and_copies_none():
    config = AdversarySettings(epsilon=0.005, tau=3, aggregation="regret:min", adversary_objective="regret:baselines",
                               inner_search=InnerSearchSettings(inner_population=6, projection="sphere"))
    callback = AdversarialInstanceCallback(config, seed=4)
    assert callback.config.inner_search is config.inner_search  # the run's slice, kept as it was given
    config = callback.config
    names = ("epsilon", "tau", "tau_unit", "inner_population", "inner_generations", "inner_draws", "aggregation_rule",
             "objective_rule", "max_adversarial", "instances_per_refresh", "adversary_switches")
    assert not set(names) & set(vars(callback))  # one place holds each setting: the config
    assert (callback.epsilon, callback.tau, callback.inner_population) == (0.005, 3, 6)
    assert str(callback.aggregation_rule) == "regret:min" and callback.objective_rule.kind == "regret"
    assert (callback.inner_draws, callback.instances_per_refresh) == (None, "one")  # R: the task's; one: the paper's
    # each setting under the config's own name (the switches are its ``all_switches``)
    assert all(hasattr(config, name) or hasattr(config.inner_search, name) for name in names[:-1])
    assert callback.adversary_switches == {"projection": "sphere"}
    assert config.search_options(2) == {"inner_population": 6,
                                        "inner_generations": config.inner_search.inner_generations,
                                        "inner_draws": 2, "objective": "regret", "projection": "sphere"}


@pytest.mark.parametrize("tau, unit, pop_size, every", [(3, "generations", 4, 3), (1, "generations", 10, 1),
                                                         (25, "samples", 5, 5), (26, "samples", 5, 5),
                                                         (4, "samples", 10, 1)])
def test_generations_per_refresh_counts_tau_in_generations(tau, unit, pop_size, every):
    # what a run's validation trace is given as its interval: tau itself, or tau samples in generations, at least one
    config = AdversaryConfig.checked(AdversarySettings(epsilon=0.01, tau=tau, tau_unit=unit))
    assert config.generations_per_refresh(pop_size) == every


def test_a_runs_validation_trace_follows_its_refresh_interval(tmp_path):
    from raise_plugin import RunConfig, start_run
    from raise_plugin.validation import ValidationTrace
    method = start_run(RunConfig(task="obp", robust=False, budget=8, pop_size=4, tau=20, tau_unit="samples",
                                 validation_trace=True, out=str(tmp_path / "run")))  # a plain run traces as often
    [trace] = [c for c in method.callbacks if isinstance(c, ValidationTrace)]
    assert trace.every == 5


def test_a_callback_shared_by_runs_starts_each_afresh_and_the_same_seed_gives_the_same_run():
    """A class's callback kept the first run's refresh count: the second run under the same seed made no refresh."""
    def run(cls):
        rec = Recorder()
        method = cls(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=16, pop_size=4,
                     max_generations=None, seed=0, callbacks=[rec])
        method.run()
        history = [{k: v for k, v in h.items() if not k.endswith("seconds")} for h in cb.history]  # timings differ
        return cb.refreshes, history, rec.samples, [e.instance_id for e in method.instance_set]

    cb = AdversarialInstanceCallback(epsilon=0.002, tau=2, inner_population=4, inner_generations=2, searcher=fake_search)
    shared = robust(EoH, callbacks=[cb])
    first = run(shared)
    assert first[0] >= 2
    assert run(shared) == first  # the class instantiated again
    assert run(robust(EoH, callbacks=[cb])) == first  # the same callback given to robust() again


def test_a_resumed_run_keeps_the_state_it_restores_and_forgets_an_earlier_runs(tmp_path):
    method = robust(EoH)(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8, pop_size=4,
                         max_generations=None)
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=2)
    cb.refreshes, cb.last_refresh_generation = 7, 9  # what an earlier run left
    method.callbacks.insert(0, cb)
    method.take_callbacks()
    assert (cb.refreshes, cb.last_refresh_generation, cb.history) == (0, 0, [])
    cb.load_state_dict({"refreshes": 2, "last_refresh_generation": 4})  # restored after: kept for the run
    method.take_callbacks()
    assert (cb.refreshes, cb.last_refresh_generation) == (2, 4)
    method.close()
