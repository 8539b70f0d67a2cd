"""GP: typed trees over a task's features, rendered to programs that go the way every sampled program goes."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("deap")

from deap import gp as deap_gp  # noqa: E402

from raise_plugin.robust import AdversarialInstanceCallback  # noqa: E402
from raise_plugin.config import RunConfig  # noqa: E402
from raise_plugin.methods import GP  # noqa: E402
from raise_plugin.methods.gp_probe import probe_signature  # noqa: E402
from raise_plugin.methods.gp_render import render_body, simplify  # noqa: E402
from raise_plugin.methods.gp_trees import to_node  # noqa: E402
from raise_plugin.robust import robust  # noqa: E402
from raise_plugin.runner import resume_run, start_run  # noqa: E402
from tasks import get_task  # noqa: E402


class Capturing(GP):
    """GP that keeps the source of every offspring it samples, in order."""

    def _sample(self, prompt, operator, **tags):
        func = super()._sample(prompt, operator, **tags)
        if func is not None:
            self.sampled = getattr(self, "sampled", []) + [prompt.source]
        return func


def _run(method_factory, seed, task_name="ojsp", budget=16):
    method = method_factory("gp", task_name, budget=budget, pop_size=4, seed=seed, cls=Capturing)
    method.run()
    return method


def _exec(source: str, name: str = "priority"):
    space: dict = {"np": np}
    exec(compile(source, "<gp>", "exec"), space)  # the test's own check of the renderer
    return space[name]


def test_the_features_come_from_each_template_signature():
    obp = probe_signature(get_task("obp"))
    assert [(f.name, f.vector) for f in obp.features] == [("item", False), ("bins", True), ("bins_minus_item", True)]
    assert obp.rows == "bins" and obp.features[2].derived
    ojsp = probe_signature(get_task("ojsp"))
    assert [f.name for f in ojsp.features][:7] == ["current_time", "machine_id", "duration", "release_time",
                                                   "due_date", "remaining_work", "remaining_operations"]
    assert "due_date_minus_current_time" in {f.name for f in ojsp.features}
    assert ojsp.features[2].source == "candidate_operations[:, 1]" and ojsp.rows == "candidate_operations"
    ovrp = probe_signature(get_task("ovrp"))
    # 6 x 8 differences would crowd the terminals: none are added
    assert sum(not f.vector for f in ovrp.features) == 6 and sum(f.vector for f in ovrp.features) == 8
    assert ovrp.features[0].source == "customer_features[0]"


def test_a_template_that_returns_no_scores_is_refused_in_one_line(tmp_path):
    from raise_plugin.cli import main

    with pytest.raises(ValueError, match="one score per candidate"):
        probe_signature(get_task("knapsack"))
    assert main(["run", "--task", "knapsack", "--method", "gp", "--no-robust", "--budget", "4",
                 "--out", str(tmp_path / "run")]) == 2


def test_the_same_seed_samples_the_same_programs_and_another_seed_others(method_factory):
    first, again, other = (_run(method_factory, s) for s in (0, 0, 1))
    assert len(first.sampled) == 16
    assert first.sampled == again.sampled
    assert first.sampled != other.sampled
    assert len(set(first.sampled)) == len(first.sampled)  # a source sampled before is bred again


def test_under_robust_the_wrapper_seed_is_the_one_used(method_factory):
    def sampled(seed):
        method = method_factory("gp", "ovrp", budget=8, pop_size=4, seed=seed, cls=robust(Capturing))
        method.run()
        return method.sampled

    assert sampled(0) != sampled(1)


def test_offspring_stay_within_the_height_and_size_limits(method_factory):
    method = method_factory("gp", "ovrp", budget=4, pop_size=4, max_height=4, max_size=12)
    with method._own_random():
        trees = [deap_gp.PrimitiveTree(deap_gp.genHalfAndHalf(method._pset, 1, 3)) for _ in range(40)]
        parents = [(None, t) for t in trees if len(t) <= 12][:8]
        starts = [deap_gp.PrimitiveTree.from_string(method._new_tree().tree, method._pset) for _ in range(50)]
        children = [method._child(parents) for _ in range(300)]
    parsed = [deap_gp.PrimitiveTree.from_string(c.tree, method._pset) for c in children]
    assert max(t.height for t in parsed + starts) <= 4 and max(len(t) for t in parsed + starts) <= 12
    assert {c.operator for c in children} == {"crossover", "mutation"}


def test_starting_trees_obey_the_size_limit_whatever_their_heights(method_factory):
    """At init_height (7, 7) (max_height 7, max_size 40) no tree of 50 fitted, and the last, of hundreds of
    nodes, was sampled; a low height no tree of max_size nodes can reach (85 of max_size 40) never ended."""
    from raise_plugin.errors import BadArgument

    method = method_factory("gp", "ovrp", budget=4, pop_size=4, init_height=(7, 7))
    with method._own_random():
        starts = [deap_gp.PrimitiveTree.from_string(method._new_tree().tree, method._pset) for _ in range(20)]
    assert max(len(t) for t in starts) <= 40 and max(t.height for t in starts) <= 7
    with pytest.raises(BadArgument, match=r"GP: init_height: must be .* and low < max_size, got \(85, 90\)"):
        method_factory("gp", "ovrp", budget=4, pop_size=4, max_height=90, init_height=(85, 90))


def test_protected_operators_give_finite_scores_of_the_right_shape(method_factory):
    method = method_factory("gp", "obp", budget=4, pop_size=4)
    bins = np.array([0.0, 1e-12, 3.0, 200.0, 1e200])
    with method._own_random():
        trees = [deap_gp.PrimitiveTree(deap_gp.genHalfAndHalf(method._pset, 2, 6)) for _ in range(300)]
    for tree in trees + [deap_gp.PrimitiveTree.from_string("div(bins, sub_vs(bins, item))", method._pset)]:
        scores = _exec(method.render(tree).source)(3.0, bins.copy())
        assert scores.shape == bins.shape and np.all(np.isfinite(scores))


def test_simplification_folds_constants_and_identities():
    sig = probe_signature(get_task("obp"))
    vectors = sig.vectors
    node = ("op", "add", (("op", "mul", (("x", "bins"), ("c", 1.0))), ("op", "sub", (("x", "item"), ("x", "item")))))
    assert simplify(node, vectors) == ("x", "bins")
    assert simplify(("op", "mul", (("c", 2.0), ("c", 3.0))), vectors) == ("c", 6.0)
    assert simplify(("op", "neg", (("op", "neg", (("x", "bins"),)),)), vectors) == ("x", "bins")
    # a tree whose scores no longer depend on the candidates still scores every one of them
    body = render_body(simplify(("op", "sub", (("x", "bins"), ("x", "bins"))), vectors), sig)
    assert "np.full(len(bins)" in body


def test_equal_trees_render_to_equal_source(method_factory):
    method = method_factory("gp", "obp", budget=4, pop_size=4)
    a = deap_gp.PrimitiveTree.from_string("sub_vs(mul_vs(bins, 1.0), item)", method._pset)
    b = deap_gp.PrimitiveTree.from_string("add(sub_vs(bins, item), sub(bins, bins))", method._pset)
    assert method.render(a).source == method.render(b).source
    assert method.render(a).tree != method.render(b).tree


def test_gp_finds_better_than_its_start_and_records_its_trees(method_factory):
    method = method_factory("gp", "ovrp", budget=40, pop_size=8, seed=0)
    method.run()
    assert method._tot_sample_nums == 40
    assert method.operator_counts["init"] == 8 and method.operator_errors == 0
    best = method._usable()[0]
    assert best.score > method.initial_best
    assert best.algorithm.startswith("GP tree: ")


@pytest.mark.parametrize("robust_run", [False, True], ids=["plain", "robust"])
def test_a_resumed_run_samples_what_an_uninterrupted_run_samples(tmp_path, robust_run):
    def config(out, budget):
        return RunConfig(task="ojsp", method="gp", robust=robust_run, tau=1, inner_population=4,
                         inner_generations=1, budget=budget, pop_size=4, seed=3, out=str(out), executor="process:1")

    def programs(out):
        return [json.loads(line)["program_id"] for line in (out / "samples.jsonl").read_text().splitlines()]

    whole, parts = tmp_path / "whole", tmp_path / "parts"
    start_run(config(whole, 22)).run()
    start_run(config(parts, 14)).run()  # stops inside a generation: two samples after the last checkpoint
    resume_run(parts, budget=22).run()
    assert len(programs(whole)) == 22
    assert programs(parts) == programs(whole)


@pytest.mark.parametrize("damage", [{"random": "x"}, {"random": [3, [1, 2], None]}, {"seen": 5}, {"samples": "abc"}])
def test_a_resumed_run_whose_checkpoint_holds_a_damaged_gp_state_is_refused_in_one_line(tmp_path, capsys, damage):
    """Each was a Python traceback (ValueError: not enough values to unpack, state vector is the wrong size, ...)."""
    from raise_plugin.cli import main

    out = tmp_path / "run"
    start_run(RunConfig(task="ovrp", method="gp", robust=False, budget=8, pop_size=4, nominal=1, seed=0,
                        out=str(out), executor="process:1", validation_trace=False)).run()
    checkpoint = json.loads((out / "checkpoint.json").read_text())
    checkpoint["method"].update(damage)
    (out / "checkpoint.json").write_text(json.dumps(checkpoint))
    capsys.readouterr()
    assert main(["resume", str(out), "--budget", "12", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"raise-ahd: error: {out / 'checkpoint.json'} is damaged (the "
                                               "method's state cannot be read: ")
    assert "remove it to resume from the records" in err[0]
    assert len((out / "samples.jsonl").read_text().splitlines()) == 8


def test_robust_gp_refreshes_and_rescores(method_factory):
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=1, inner_population=4, inner_generations=1)
    method = method_factory("gp", "ojsp", budget=16, pop_size=4, seed=1, cls=robust(GP, callbacks=[cb]))
    nominal = len(method.instance_set)
    method.run()
    assert method.samples == 16
    assert cb.refreshes >= 2 and len(method.instance_set) > nominal
    assert GP.state_dict(method)["method"] == "gp"
    assert method.best().score == max(f.score for f in method._population.population)


def test_gp_runs_robust_on_an_own_task_file(tmp_path, fresh_registry):
    out = tmp_path / "lb"
    method = start_run(RunConfig(task="examples/load_balance.py:LoadBalance", method="gp", robust=True, tau=1,
                                 inner_population=4, inner_generations=1, budget=12, pop_size=4, seed=0,
                                 out=str(out), executor="process:1"))
    assert [f.name for f in method.signature.features] == ["job", "loads", "loads_minus_job"]
    method.run()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 12 and summary["refreshes"] >= 1


@pytest.mark.slow
def test_compare_runs_gp_beside_eoh(tmp_path):
    from raise_plugin.harness.compare import run_compare
    from raise_plugin.harness.compare_config import CompareConfig

    result = run_compare(CompareConfig(task="ojsp", methods=("gp", "eoh"), epsilons=(0.002,), budget=4,
                                       pop_size=2, seeds=(0,), out=str(tmp_path / "cmp"), tau=1,
                                       inner_population=4, inner_generations=1, suite_instances=1, nominal=1,
                                       workers=1),
                         quiet=True)
    methods = result.tables["table_all_distributions"].methods
    assert "GP" in methods and "EoH" in methods and any(m.startswith("RAISE-GP") for m in methods)


@pytest.mark.parametrize("method, said", [("gp", 0), ("eoh", 1)])
def test_the_offline_sampler_s_notice_is_said_only_to_a_method_that_asks_it(tmp_path, caplog, monkeypatch, method,
                                                                             said):
    """A GP run printed "programs are rule-based transformations ... of the parents found in each prompt":
    GP asks its back-end nothing."""
    import logging
    import threading

    from raise_plugin.llm import NO_LLM_NOTICE, offline

    monkeypatch.setattr(offline, "_warned", threading.Event())  # as in a fresh process
    with caplog.at_level(logging.WARNING, logger="raise_plugin.llm"):
        start_run(RunConfig(task="ovrp", method=method, budget=4, pop_size=4, tau=1, out=str(tmp_path / "r"),
                            workers=1, validation_trace=False, host_profiler=False)).run()
    assert [r.getMessage() for r in caplog.records].count(NO_LLM_NOTICE) == said
