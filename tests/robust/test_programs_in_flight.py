"""Several programs in flight (``programs_in_flight`` k): up to k programs are evaluated at once,
and a run records the same samples, populations, re-scores and best for a seed and k whatever the
workers or the executor; k = 1 is the run of one sampler (tests/test_characterisation.py holds it)."""
from __future__ import annotations

import threading
import time

import pytest
from llm4ad.method.eoh import EoH
from llm4ad.method.funsearch import FunSearch

from robust_helpers import ScriptedLLM, fake_search, small_obp_evaluation
from raise_plugin.cli import main
from raise_plugin.llm import make_llm
from raise_plugin.methods import METHODS
from raise_plugin.programs import compile_priority
from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.robust import Callback, robust
from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.robust.tags import tags
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import resume_run, start_run
from tasks import get_task

TIMING = {"sample_time", "evaluate_time", "seconds", "rescore_seconds", "search_seconds"}
SAMPLE = ("sample", "program_id", "generation", "instance_set", "score", "joined", "duplicate", "broken", "error",
          "metrics", "failed_on", "rejected", "function")


def config(out, **kw) -> RunConfig:
    """A short robust OJSP run: two nominal instances, a refresh every generation, min aggregation (so
    early rejection stops some candidates on a bound read when they were drawn)."""
    base = dict(task="ojsp", robust=True, budget=28, pop_size=4, tau=2, nominal=2, seed=3, out=str(out),
                inner_population=4, inner_generations=2, aggregation="min", instance_seed="public",
                programs_in_flight=4, validation_trace=False, host_profiler=False)
    base.update(kw)
    return RunConfig(**base)


def recorded(out) -> dict:
    """What a run records that must not depend on its workers (the evaluation counts do)."""
    def strip(line):
        return {k: v for k, v in line.items() if k not in TIMING}

    return {"samples": [{k: s.get(k) for k in SAMPLE} for s in read_jsonl(out / "samples.jsonl")],
            "populations": read_jsonl(out / "population.jsonl"),
            "scores": [strip(line) for line in read_jsonl(out / "scores.jsonl")],
            "instances": [r["instance_id"] for r in read_jsonl(out / "instances" / "index.jsonl")
                          if r.get("kind") == "instance"],
            "best": (out / "best_program.py").read_text() if (out / "best_program.py").exists() else None}


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    out = tmp_path_factory.mktemp("k4") / "process1"
    method = start_run(config(out, executor="process:1"))
    method.run()
    assert method.programs_in_flight == 4 and method.samples == 28
    run = recorded(out)
    assert any(s["rejected"] for s in run["samples"])  # stopped early on the bound read when it was drawn
    return run


@pytest.mark.parametrize("executor", ["serial", "process:2", "process:4", "dask://local:2"])
def test_four_programs_in_flight_record_the_same_run_whatever_the_executor(tmp_path, one_worker, executor):
    if executor.startswith("dask"):
        pytest.importorskip("dask.distributed")
    out = tmp_path / "run"
    start_run(config(out, executor=executor)).run()
    now = recorded(out)
    assert len(now["samples"]) == 28 and len(now["instances"]) > 2  # refreshed: the set grew
    assert now == one_worker


class Registered(Callback):
    """Every sample as registered: its number, program, score and metrics."""

    def __init__(self):
        self.samples = []

    def on_sample_evaluated(self, method, snapshot, sample):
        self.samples.append((sample.sample, sample.program.program_id, sample.program.score, dict(sample.metrics)))


def plain_run(name: str, executor: str):
    """A plain run of method ``name`` with three programs in flight on two OJSP instances."""
    task = get_task("ojsp")
    registered = Registered()
    options = {"diverse_instances": 4} if name == "eohs" else {}
    method = robust(METHODS[name])(llm=make_llm("offline", seed=0, task="ojsp"),
                                   evaluation=task.evaluation(instances=task.nominal_instances()[:2]),
                                   max_sample_nums=16, pop_size=4, max_generations=None, seed=0, executor=executor,
                                   programs_in_flight=3, callbacks=[registered], **options)
    method.run()
    return registered.samples, method.snapshot().population


@pytest.mark.parametrize("name", ["reevo", "partevo", "eohs", "moh", "gp"])
def test_every_method_of_the_eoh_family_takes_turns(name):
    one, two = plain_run(name, "process:1"), plain_run(name, "process:2")
    assert [s[0] for s in one[0]] == list(range(1, 17))
    assert one == two


class Overlap:
    """Wraps a method's evaluator: the most evaluations of new samples under way at once."""

    def __init__(self, method):
        self._inner = method._evaluator.evaluate_program_record_time
        self._lock = threading.Lock()
        self.now = self.most = 0
        method._evaluator.evaluate_program_record_time = self

    def __call__(self, program, **kwargs):
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(0.05)  # long enough for the lanes' turns to come round
            return self._inner(program, **kwargs)
        finally:
            with self._lock:
                self.now -= 1


@pytest.mark.parametrize("k", [1, 3])
def test_k_programs_are_evaluated_at_once(k):
    method = robust(EoH)(llm=ScriptedLLM(1), evaluation=small_obp_evaluation(count=2, num_items=100),
                         max_sample_nums=16, pop_size=4, max_generations=None, executor="process:2",
                         programs_in_flight=k)
    overlap = Overlap(method)
    method.run()
    assert method.samples == 16
    assert overlap.most == k


class Fresh(Callback):
    """After every generation and refresh, each member's score against one computed afresh on the current set."""

    def __init__(self):
        self.checked, self.stale = 0, []

    def _check(self, method):
        evaluation = small_obp_evaluation(count=2, num_items=100, aggregation=method.evaluation.aggregation)
        evaluation.instances = [e.instance for e in method.instance_entries()]
        for func in method._population.members():
            if tags(func).duplicate:
                continue
            code = method.program_text_of(func)
            score = evaluation.evaluate_program(code, compile_priority(code))
            self.checked += 1
            if (float("-inf") if score is None else score) != func.score:
                self.stale.append((func.score, score))

    def on_generation_end(self, method, snapshot):
        self._check(method)

    def on_instances_updated(self, method, snapshot, update):
        self._check(method)


def test_with_programs_in_flight_no_member_keeps_a_stale_score():
    fresh = Fresh()
    adversary = AdversarialInstanceCallback(epsilon=0.002, tau=1, searcher=fake_search, inner_population=3,
                                            aggregation="min")
    method = robust(EoH)(llm=ScriptedLLM(2),
                         evaluation=small_obp_evaluation(count=2, num_items=100, aggregation="min"),
                         max_sample_nums=24, pop_size=4, max_generations=None, executor="process:2",
                         programs_in_flight=3, callbacks=[adversary, fresh])
    method.run()
    assert method.samples == 24 and adversary.refreshes >= 4 and method._stale_samples > 0
    assert fresh.checked > 30 and fresh.stale == []


def test_one_program_in_flight_samples_in_the_host_threads_as_before():
    method = robust(EoH)(llm=ScriptedLLM(1), evaluation=small_obp_evaluation(count=2, num_items=100),
                         max_sample_nums=4, pop_size=2, max_generations=None)
    assert method.programs_in_flight == 1 and method._in_flight is None
    assert RunConfig().engine.programs_in_flight == 1


def test_a_run_with_programs_in_flight_stopped_and_resumed_ends_at_its_budget(tmp_path):
    out = tmp_path / "run"
    method = start_run(config(out, budget=20, max_llm_calls=9, executor="process:2"))
    method.run()
    assert method.stop_reason is not None and method.samples == 9  # every sample drawn was registered
    again = resume_run(out, max_llm_calls=100)
    again.run()
    samples = read_jsonl(out / "samples.jsonl")
    assert again.samples == 20 and [s["sample"] for s in samples] == list(range(1, 21))
    assert read_jsonl(out / "population.jsonl")[-1]["samples"] <= 20


@pytest.mark.parametrize("fields, message", [
    ({"programs_in_flight": 0}, r"^config field 'programs_in_flight': must be >= 1 programs, got 0$"),
    ({"programs_in_flight": 2, "num_samplers": 2}, r"^config field 'programs_in_flight': .*num_samplers must be 1"),
])
def test_a_bad_value_is_one_line_naming_the_setting(fields, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**fields)


def test_a_method_that_cannot_take_turns_is_refused_naming_its_loop(tmp_path):
    with pytest.raises(ConfigError, match=r"'programs_in_flight': method 'funsearch' evaluates one program at a "
                                          r"time, not 4: the host's sampler loop \(llm4ad\.method\.funsearch"):
        start_run(config(tmp_path / "run", method="funsearch"))
    assert not (tmp_path / "run" / "config.json").exists()
    with pytest.raises(ValueError, match="programs_in_flight: RobustFunSearch cannot"):
        robust(FunSearch)(llm=ScriptedLLM(), evaluation=small_obp_evaluation(), max_sample_nums=4,
                          programs_in_flight=2)
    with pytest.raises(ValueError, match="^programs_in_flight: must be an integer"):
        robust(EoH)(llm=ScriptedLLM(), evaluation=small_obp_evaluation(), max_sample_nums=4, pop_size=2,
                    programs_in_flight="4")


def test_the_flag_gives_a_one_line_error(tmp_path, capsys):
    assert main(["run", "--task", "ojsp", "--programs-in-flight", "0", "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == "raise-ahd: error: config field 'programs_in_flight': must be >= 1 programs, got 0\n"
