"""The robust wrapper around llm4ad's EoH: the host facts it designs around."""
from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest
from llm4ad.base import TextFunctionProgramConverter
from llm4ad.method.eoh import EoH, EoHProfiler

from robust_helpers import ScriptedLLM, fake_search, small_obp_evaluation
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust.hooks import Callback
from raise_plugin.robust.tags import tags
from raise_plugin.programs import compile_priority
from raise_plugin.robust import QuietProfiler, RobustMethodMixin, RobustPopulationMixin, robust

RobustEoH = robust(EoH)


def make(budget=20, pop_size=4, callbacks=(), **kwargs):
    kwargs.setdefault("llm", ScriptedLLM(0))
    kwargs.setdefault("evaluation", small_obp_evaluation())
    return RobustEoH(max_sample_nums=budget, pop_size=pop_size, max_generations=None,
                     callbacks=list(callbacks), **kwargs)


def function(body: str):
    f = TextFunctionProgramConverter.text_to_function(f"def priority(item, bins):\n    {body}\n")
    f.algorithm = "{test}"
    return f


def fresh_score(method, func):
    code = method.program_text_of(func)
    ev = small_obp_evaluation()
    ev.instances = [e.instance for e in method.instance_entries()]
    ev.aggregation = method.evaluation.aggregation
    s = ev.evaluate_program(code, compile_priority(code))
    return float("-inf") if s is None else s


def test_one_line_wrapping_keeps_the_host_class_and_swaps_its_parts():
    method = make()
    assert isinstance(method, EoH) and isinstance(method, RobustMethodMixin)
    assert isinstance(method._population, RobustPopulationMixin)
    assert isinstance(method._profiler, QuietProfiler)  # profiler=None would never count a sample
    assert type(method).__name__ == "RobustEoH"
    with pytest.raises(TypeError, match="method class"):
        robust(EoH(llm=ScriptedLLM(), evaluation=small_obp_evaluation(), max_sample_nums=4, pop_size=2))


def test_profiler_none_still_stops_at_the_budget():
    method = make(budget=14, profiler=None)
    method.run()
    assert method.samples == method._tot_sample_nums == 14


def test_the_global_start_method_is_left_alone():
    before = multiprocessing.get_start_method(allow_none=True)
    make()
    assert multiprocessing.get_start_method(allow_none=True) == before


def test_duplicates_are_found_by_code_not_by_score():
    method = make()
    pop = method._population
    a = function("return -(bins - item)")
    b = function("return -(bins - item) * 1.0")  # another program, the same score
    c = function("return -(bins - item)")  # the same program again
    for f in (a, b, c):
        f.score = method._evaluator.evaluate_program(TextFunctionProgramConverter.function_to_program(
            f, method._template_program))
        pop.register_function(f)
    assert a.score == b.score and np.isfinite(b.score)
    assert c.score == float("-inf")


def test_none_scores_and_an_all_failed_population_do_not_break_selection():
    method = make(pop_size=2)
    pop = method._population
    broken = [function("return bins[:1]"), function("return bins[:2]")]
    pop._generation = 1  # past initialisation: invalid samples join with -inf
    for f in broken:
        pop.register_function(f)
    assert pop.generation == 2
    assert all(f.score == float("-inf") for f in pop.population)
    assert pop.selection() in broken  # uniform fallback instead of spinning forever


def test_a_sample_scored_on_an_old_set_is_re_evaluated_before_it_joins():
    method = make()
    f = function("return -(bins - item) ** 2")
    program = TextFunctionProgramConverter.function_to_program(f, method._template_program)
    f.score = method._evaluator.evaluate_program(program)  # on the nominal set
    old = f.score
    adv = fake_search(method.task, compile_priority(str(program)), 0.002, nominal=method.nominal_instances(), seed=1)
    method.add_instance(adv.instance, instance_id="adv-1", distance=adv.distance)
    method._population.register_function(f)  # as a second sampler would, after the set changed
    assert method._stale_samples == 1
    assert f.score == fresh_score(method, f) != old


class SlowLLM(ScriptedLLM):
    """Sleeps a little so two sampler threads interleave with refreshes."""

    def draw_sample(self, prompt, *args, **kwargs):
        time.sleep(float(np.random.default_rng(self.calls).uniform(0.0, 0.02)))
        return super().draw_sample(prompt, *args, **kwargs)


class StaleWatch(Callback):
    """After every generation and refresh, every member's score must equal a fresh one on the current set."""

    def __init__(self):
        self.stale: list = []
        self.checks = 0

    def _check(self, method):
        ev = small_obp_evaluation()
        ev.instances = [e.instance for e in method.instance_entries()]
        for func in method._population.members():
            if tags(func).duplicate:
                continue
            self.checks += 1
            code = method.program_text_of(func)
            s = ev.evaluate_program(code, compile_priority(code))
            s = float("-inf") if s is None else s
            if s != func.score:
                self.stale.append((func.score, s))

    def on_generation_end(self, method, snapshot):
        self._check(method)

    def on_instances_updated(self, method, snapshot, update):
        self._check(method)

    def on_run_end(self, method, snapshot):
        self._check(method)


def test_two_samplers_never_leave_a_stale_score_in_the_population():
    watch = StaleWatch()
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=1, searcher=fake_search, inner_population=3)
    method = make(budget=48, pop_size=4, callbacks=[cb, watch], llm=SlowLLM(1), num_samplers=2, num_evaluators=2)
    method.run()
    assert cb.refreshes >= 5
    assert watch.checks > 50
    assert watch.stale == []
    # with k samplers the host may overshoot its budget by up to k - 1 samples
    assert 48 <= method.samples <= 49


def test_the_host_profiler_still_writes_its_logs(tmp_path):
    profiler = EoHProfiler(str(tmp_path), create_random_path=False, log_style="simple")
    cb = AdversarialInstanceCallback(epsilon=0.002, tau=2, searcher=fake_search)
    method = make(budget=16, callbacks=[cb], profiler=profiler)
    method.run()
    assert (tmp_path / "samples" / "samples_1~200.json").exists()
    assert list((tmp_path / "population").glob("pop_*.json"))
    assert method.samples == 16


def test_hooks_are_called_one_at_a_time():
    class Overlap(Callback):
        def __init__(self):
            self.inside = 0
            self.max_inside = 0
            self.lock = threading.Lock()

        def _enter(self):
            with self.lock:
                self.inside += 1
                self.max_inside = max(self.max_inside, self.inside)
            time.sleep(0.001)
            with self.lock:
                self.inside -= 1

        def on_sample_evaluated(self, method, snapshot, sample):
            self._enter()

        def on_generation_end(self, method, snapshot):
            self._enter()

    watch = Overlap()
    method = make(budget=24, callbacks=[watch], llm=SlowLLM(2), num_samplers=2)
    method.run()
    assert watch.max_inside == 1


def test_an_evaluation_without_the_instance_set_protocol_is_refused():
    class Plain:
        template_program = small_obp_evaluation().template_program
        task_description = ""

    with pytest.raises(TypeError, match="instances"):
        RobustEoH(llm=ScriptedLLM(), evaluation=Plain(), max_sample_nums=4, pop_size=2)


class HostileLLM(ScriptedLLM):
    """Every third answer allocates 24 GB; every fifth tries to start a process."""

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        text = super().draw_sample(prompt, *args, **kwargs)
        if self.calls % 3 == 0:
            return ("{Hoards memory.} ```python\nimport numpy as np\ndef priority(item, bins):\n"
                    "    hoard = np.ones(3_000_000_000)\n    return -bins\n```")
        if self.calls % 5 == 0:
            return ("{Starts a process.} ```python\ndef priority(item, bins):\n"
                    "    __import__('os').system('true')\n    return -bins\n```")
        return text


def test_hostile_samples_are_invalid_with_their_reason_and_the_run_goes_on(tmp_path):
    import json

    from raise_plugin.rundir.writer import RunDirectory

    method = RobustEoH(llm=HostileLLM(0, fail_every=0), evaluation=small_obp_evaluation(), max_sample_nums=15,
                       pop_size=4, max_generations=None, recorder=RunDirectory(tmp_path))
    method.run()
    assert method.samples == 15
    lines = [json.loads(x) for x in (tmp_path / "samples.jsonl").read_text().splitlines()]
    hoards = [x for x in lines if "np.ones(3_000_000_000)" in x["program"]]
    spawns = [x for x in lines if "system('true')" in x["program"]]
    assert hoards and spawns
    assert all(x["score"] is None and "memory" in (x["error"] or "").lower() for x in hoards)
    assert all(x["score"] is None and "process" in (x["error"] or "").lower() for x in spawns)
    assert any(x["score"] is not None for x in lines)


def test_results_do_not_depend_on_the_number_of_evaluation_workers():
    def run(executor):
        cb = AdversarialInstanceCallback(epsilon=0.002, tau=2, searcher=fake_search, inner_population=3)
        method = robust(EoH, callbacks=[cb])(llm=ScriptedLLM(4), evaluation=small_obp_evaluation(count=4),
                                             max_sample_nums=20, pop_size=4, max_generations=None, seed=4,
                                             executor=executor)
        method.run()
        return ([(r.program_id, dict(r.metrics)) for r in method._book.records()],
                [e.instance_id for e in method.instance_entries()], method.snapshot().population)

    one, three = run("process:1"), run("process:3")
    assert one == three
    assert len(one[1]) > 4  # the set grew, and each re-scoring was shared among the workers too


def test_a_callback_class_given_for_an_instance_is_refused_in_one_line(tmp_path):
    """Accepted, every hook then failed unbound and ``run()`` ended in a TypeError from ``summary_fields``."""
    import raise_plugin as rp

    said = r"^callbacks: Callback is a class: give an instance, Callback\(\)$"
    with pytest.raises(rp.UserError, match=said):
        robust(EoH, callbacks=[Callback])
    with pytest.raises(rp.UserError, match=said):
        make(callbacks=[Callback])
    out = tmp_path / "run"
    with pytest.raises(rp.UserError, match=said):
        rp.start_run(rp.RunConfig(task="ovrp", budget=4, pop_size=2, tau=1, out=str(out)), callbacks=[Callback])
    assert not out.exists()
