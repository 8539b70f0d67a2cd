"""Promises every plugin method keeps: host shape, exact budget, determinism, improvement, robust wrapping."""
from __future__ import annotations

import math

import pytest
from llm4ad.base import TextFunctionProgramConverter
from llm4ad.method.eoh import EoH

from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.methods import METHODS, get_method
from raise_plugin.methods.base import MethodBase
from raise_plugin.methods.population import MethodPopulation
from raise_plugin.programs import compile_priority
from raise_plugin.robust import RobustPopulationMixin, robust

PLUGIN_METHODS = ("reevo", "partevo", "eohs", "moh")
TASKS = ("obp", "ojsp", "ovrp")


def test_every_method_is_registered_by_name():
    assert set(METHODS) == {"eoh", "reevo", "partevo", "eohs", "moh", "gp", "funsearch", "hillclimb",
                            "randsample"}
    for name in PLUGIN_METHODS:
        cls = get_method(name)
        assert issubclass(cls, EoH) and issubclass(cls, MethodBase)


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("name", PLUGIN_METHODS)
def test_runs_to_exactly_its_budget_on_every_task(method_factory, name, task_name):
    method = method_factory(name, task_name, budget=22, pop_size=4)
    method.run()
    assert method._tot_sample_nums == 22
    assert len(method._sampler._sampler.code_calls()) == 22  # every code answer parsed: one sample each
    assert method._population.generation >= 3
    assert len(method._population) == 4
    assert all(math.isfinite(f.score) for f in method._population.population)


def test_an_unwrapped_run_stops_the_sandbox_workers_it_started(method_factory, evaluation_factory):
    method = method_factory("reevo", "ovrp", budget=8, pop_size=4,
                            evaluation=evaluation_factory("ovrp", safe_evaluate=True))
    started = []
    runner = method._evaluator._runner
    real_run = runner.run
    runner.run = lambda *a, **k: (started.append(runner.engine is not None), real_run(*a, **k))[1]
    method.run()
    assert started and all(started)  # its programs ran in the sandboxed engine
    assert runner._engine is None  # and the run stopped the engine's workers at its end


@pytest.mark.parametrize("name", PLUGIN_METHODS)
def test_reflections_and_summaries_are_llm_calls_but_not_samples(method_factory, name):
    method = method_factory(name, "ovrp", budget=20)
    method.run()
    llm = method._sampler._sampler
    assert method._tot_sample_nums == 20
    assert len(llm.calls) == 20 + method.text_calls
    assert len(llm.text_calls()) == method.text_calls
    if name not in ("eohs", "moh"):
        assert method.text_calls > 0


def _trace(method):
    method.run()
    llm = method._sampler._sampler
    return ([(op, prompt, answer) for op, prompt, answer in llm.calls],
            [(str(f), f.score) for f in method._population.population])


@pytest.mark.parametrize("name", PLUGIN_METHODS)
def test_deterministic_under_a_seed_with_one_sampler(method_factory, name):
    first = _trace(method_factory(name, "ojsp", budget=20, seed=3))
    second = _trace(method_factory(name, "ojsp", budget=20, seed=3))
    assert first == second
    other = _trace(method_factory(name, "ojsp", budget=20, seed=4))
    assert other[0] != first[0]


# (task, budget) where the offline sampler improves reliably on the initial population.
IMPROVES = [("reevo", "ojsp", 40), ("reevo", "ovrp", 80), ("partevo", "ojsp", 40), ("partevo", "ovrp", 80),
            ("eohs", "ojsp", 40), ("eohs", "ovrp", 40)]


@pytest.mark.parametrize("name,task_name,budget", IMPROVES)
def test_improves_on_its_initial_population(method_factory, name, task_name, budget):
    method = method_factory(name, task_name, budget=budget, pop_size=6)
    method.run()
    best = max(f.score for f in method._population.population)
    assert method.initial_best is not None
    assert best > method.initial_best


# OBP's improvement cases take three minutes of processor time on instances of 1000 and 5000 items (no
# smaller size improves: docs/testing.md); the small size runs PartEvo's, the cheapest, and every
# method improves on OJSP and OVRP above
SMALL_OBP = "full size only (make test-full); at the small size PartEvo's case shows an improvement on OBP"


@pytest.mark.slow
def test_eohs_improves_on_obp(method_factory, full_size):
    # 1000 items: on 500-item instances of the validation families one bin is too large a step;
    # under seed 0 the first improvement comes at sample 11 or 12, a larger one by sample 40
    if not full_size:
        pytest.skip(SMALL_OBP)
    method = method_factory("eohs", "obp", budget=40, pop_size=6, diverse_instances=10,
                            diverse_params={"num_items": 1000})
    method.run()
    assert max(f.score for f in method._population.population) > method.initial_best


def test_population_dedups_by_code_not_by_score():
    pop = MethodPopulation(pop_size=4)
    def f(body, score):
        func = TextFunctionProgramConverter.text_to_function(f"def priority(item, bins):\n    {body}\n")
        func.score = score
        return func
    a, b, c = f("return -(bins - item)", -1.0), f("return -(bins - item) * 1.0", -1.0), f("return -(bins - item)", -1.0)
    for func in (a, b, c):
        pop.register_function(func)
    assert a.score == b.score == -1.0
    assert c.score == float("-inf")


@pytest.mark.parametrize("name", PLUGIN_METHODS)
def test_robust_wrapper_refreshes_and_rescores(method_factory, evaluation_factory, name):
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=1, inner_population=4, inner_generations=1)
    method = method_factory(name, "obp", budget=16, pop_size=4, seed=1, cls=robust(METHODS[name], callbacks=[cb]))
    assert isinstance(method._population, RobustPopulationMixin)
    assert isinstance(method._population, MethodPopulation)  # the method's survival rule still applies
    nominal = len(method.instance_set)
    method.run()
    assert method.samples == method._tot_sample_nums == 16
    assert cb.refreshes >= 3
    assert len(method.instance_set) > nominal
    # every member carries its score on the current set (re-scored after each refresh)
    ev = evaluation_factory("obp")
    ev.instances = [e.instance for e in method.instance_entries()]
    for func in method._population.population:
        code = method.program_text_of(func)
        fresh = ev.evaluate_program(code, compile_priority(code))
        assert func.score == pytest.approx(fresh, rel=0, abs=1e-12)
    assert method.best().score == max(f.score for f in method._population.population)
    # the method's own attributes leave the wrapper's interface alone
    assert method.summary(finished=True)["samples"] == 16
    assert "callbacks" in method.state_dict()
    assert METHODS[name].state_dict(method)["method"] == name  # the method's own state, under the wrapper


def test_unwrapped_runs_evaluate_in_a_child_process_by_default(method_factory, evaluation_factory):
    ev = evaluation_factory("ovrp", safe_evaluate=True)
    method = method_factory("reevo", "ovrp", budget=8, evaluation=ev)
    method.run()
    assert method._tot_sample_nums == 8
    assert method._evaluator.evaluations >= 8
    member = method._population.population[0]
    assert method._metrics_of(member, compute=False).shape == (len(ev.instances),)


@pytest.mark.slow
@pytest.mark.parametrize("name, budget", [("reevo", 80), ("partevo", 48)])
def test_improves_on_large_obp_instances(method_factory, name, budget, full_size):
    # two of the nominal set's 5000-item instances: on 500-item sets one bin is a large step and
    # the offline sampler's rewrites of BestFit-like seeds rarely save one; here they do (seeds 0
    # and 1 both improve, as on the whole five-instance set, at two fifths of its cost). Seed 0's
    # first improvement: ReEvo's between samples 67 and 70, PartEvo's between 37 and 40
    if name != "partevo" and not full_size:
        pytest.skip(SMALL_OBP)
    from tasks import get_task
    task = get_task("obp")
    evaluation = task.evaluation(instances=task.nominal_instances()[:2], safe_evaluate=False)
    method = method_factory(name, "obp", budget=budget, pop_size=10, evaluation=evaluation)
    method.run()
    assert max(f.score for f in method._population.population) > method.initial_best


@pytest.mark.parametrize("name", PLUGIN_METHODS)
def test_a_run_whose_operator_steps_keep_failing_ends_as_failed_saying_why(tmp_path, monkeypatch, name):
    # it ended the sampler thread and the run said it had finished, with none of its budget and no reason
    import raise_plugin as rp

    def broken(self):
        raise ValueError("a broken prompt")

    monkeypatch.setattr(get_method(name), "_init_prompt", broken)
    config = rp.RunConfig(task="ovrp", method=name, robust=False, budget=4, pop_size=2, nominal=1,
                          validation_trace=False, out=str(tmp_path / "run"))
    summary = rp.start_run(config).run()
    assert not summary["finished"] and summary["samples"] == 0
    assert summary["failure"] == (f"{name}: 25 operator steps in a row failed (init); the last: "
                                  "ValueError: a broken prompt")
