"""robust() on llm4ad's FunSearch (programs database), HillClimb and RandSample (incumbent):
the same hooks, run directory, resume and accounting as EoH, and scores that follow the set."""
from __future__ import annotations

import _thread
import json
import math
import threading

import pytest
from llm4ad.method.funsearch import FunSearch
from llm4ad.method.hillclimb import HillClimb
from llm4ad.method.randsample import RandSample

from raise_plugin.robust.hooks import Callback
from raise_plugin.config import RunConfig
from raise_plugin.llm import OfflineSampler
from raise_plugin.programs import compile_priority
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import resume_run, start_run
from raise_plugin.robust import robust, shape_of
from raise_plugin.robust.database import DatabaseShape
from raise_plugin.robust.incumbent import IncumbentShape
from tasks import get_task

SHAPED = ["funsearch", "hillclimb", "randsample"]


class FreshCheck(Callback):
    """After every refresh: each shown program's score against a fresh evaluation on the new set."""

    def __init__(self):
        self.checked = 0
        self.mismatches = []

    def on_instances_updated(self, method, snapshot, update):
        entries = method.instance_entries()
        evaluation = method.task.evaluation(instances=[e.instance for e in entries])
        evaluation.nominal_count = sum(e.origin == "nominal" for e in entries)
        for p in snapshot.population:
            code = method.program_text(p.program_id)
            fresh = evaluation.evaluate_program(code, compile_priority(code))
            self.checked += 1
            if (float("-inf") if fresh is None else fresh) != p.score:
                self.mismatches.append((p.program_id, p.score, fresh))


def _config(tmp_path, method, budget=30, **kw):
    base = dict(task="ovrp", method=method, robust=True, budget=budget, pop_size=5, tau=2, seed=0,
                inner_population=4, inner_generations=2, out=str(tmp_path / method), validation_trace=False,
                host_profiler=False)
    return RunConfig(**{**base, **kw})


def test_each_host_class_has_its_adapter():
    assert shape_of(FunSearch) is DatabaseShape
    assert shape_of(HillClimb) is IncumbentShape and shape_of(RandSample) is IncumbentShape
    with pytest.raises(TypeError, match="cannot wrap"):
        robust(dict)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One 30-sample robust run per host shape, checked against fresh evaluations after every
    refresh; made at first use and shared by the tests that read a finished run."""
    made = {}

    def get(method: str):
        if method not in made:
            out, check = tmp_path_factory.mktemp(method), FreshCheck()
            run = start_run(_config(out, method), callbacks=[check])
            run.run()
            made[method] = run, check, out / method
        return made[method]
    return get


@pytest.mark.parametrize("method", SHAPED)
def test_a_robust_run_refreshes_and_scores_follow_the_set(finished, method):
    _, check, out = finished(method)
    summary = json.loads((out / "summary.json").read_text())
    samples = read_jsonl(out / "samples.jsonl")
    assert summary["finished"] and summary["hook_errors"] == 0
    assert [s["sample"] for s in samples] == list(range(1, len(samples) + 1))
    assert len(samples) >= 30  # the host's template is a sample too
    assert summary["generations"] == len(samples) // 5 and summary["refreshes"] >= 2
    assert check.checked > 0 and check.mismatches == []
    compute = summary["compute"]
    assert compute["inner_evaluations"] > 0 and compute["rescore_evaluations"] > 0


def test_hillclimb_incumbent_is_the_best_on_the_final_set(finished):
    run, _, _ = finished("hillclimb")
    archive, _ = run._search_members()
    assert run._best_function_found is archive[0]
    assert all(archive[0].score >= f.score for f in archive)
    assert run.best().score == archive[0].score


def test_funsearch_islands_are_rebuilt_on_robust_scores(finished):
    run, _, _ = finished("funsearch")
    assert run.snapshot().refreshes >= 2
    for island in run._database.islands:
        for key, cluster in island.clusters.items():
            assert all(f.score == key == cluster.score for f in cluster.programs)
            assert math.isfinite(key)
    best = max(f.score for _, f in run._stored())
    assert run.best().score == best


@pytest.mark.parametrize("method", SHAPED)
def test_same_seed_same_run(tmp_path, method):
    runs = []
    for k in range(2):
        cfg = _config(tmp_path / str(k), method, budget=20)
        start_run(cfg).run()
        runs.append([(s["program_id"], s["score"]) for s in read_jsonl(tmp_path / str(k) / method / "samples.jsonl")])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("method", SHAPED)
def test_resume_continues_to_the_new_budget(tmp_path, method):
    start_run(_config(tmp_path, method, budget=15)).run()
    resume_run(tmp_path / method, budget=30).run()
    resumed_dir = tmp_path / method
    samples = read_jsonl(resumed_dir / "samples.jsonl")
    assert [s["sample"] for s in samples] == list(range(1, len(samples) + 1))
    assert 30 <= len(samples) <= 30 + 4  # FunSearch draws 4 samples per prompt, past the budget
    summary = json.loads((resumed_dir / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == len(samples)


def test_a_call_cap_stops_a_hillclimb_cleanly(tmp_path):
    run = start_run(_config(tmp_path, "hillclimb", budget=40, max_llm_calls=8))
    run.run()
    summary = json.loads((tmp_path / "hillclimb" / "summary.json").read_text())
    assert summary["stopped"] and not summary["finished"]
    assert summary["samples"] <= 10


def test_on_exception_hears_why_a_run_ended(tmp_path, monkeypatch):
    class Heard(Callback):
        def __init__(self):
            self.seen = []

        def on_exception(self, method, snapshot, exc):
            self.seen.append((str(exc), snapshot.samples))

    def host_fails(self):
        raise RuntimeError("the host gave up")

    monkeypatch.setattr(HillClimb, "run", host_fails)
    heard, other = Heard(), Heard()
    run = start_run(_config(tmp_path, "hillclimb", budget=10), callbacks=[heard, other])
    with pytest.raises(RuntimeError, match="gave up"):
        run.run()
    assert heard.seen == [("the host gave up", 0)]
    summary = json.loads((tmp_path / "hillclimb" / "summary.json").read_text())
    assert not summary["finished"]
    keys = [k.rsplit(".", 1)[-1] for k in run.state_dict()["callbacks"]]
    assert "Heard" in keys and "Heard#2" in keys  # two of one class do not collide


@pytest.mark.parametrize("method", ["eoh", "funsearch"])
def test_an_interrupt_of_the_run_stops_the_hosts_sampler_threads(tmp_path, method):
    """Ctrl-C reaches the thread that called ``run()`` (a notebook, compare's jobs in its own
    process): the host's sampler threads went on drawing samples, each an LLM request, until the
    budget, after ``run()`` had raised. They now end with the run: no sample is drawn after it."""
    class InterruptAtFour(Callback):
        def on_sample_evaluated(self, method, snapshot, sample):
            if snapshot.samples == 4:
                _thread.interrupt_main()  # as SIGINT does: KeyboardInterrupt in the thread that runs the run

    llm = OfflineSampler(seed=0, task="ovrp")
    drawn = []
    llm.draw_sample = lambda prompt, *a, _draw=llm.draw_sample, **kw: drawn.append(1) or _draw(prompt, *a, **kw)
    run = start_run(_config(tmp_path, method, budget=40, robust=False), llm=llm, callbacks=[InterruptAtFour()])
    with pytest.raises(KeyboardInterrupt):
        run.run()
    at_interrupt = len(drawn)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(timeout=60)
    assert len(drawn) <= at_interrupt + 1  # the one under way, at the most
    assert not [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    summary = json.loads((tmp_path / method / "summary.json").read_text())
    assert summary["stopped"] == "ended by KeyboardInterrupt" and not summary["finished"]


@pytest.mark.parametrize("method", ["eoh", "hillclimb"])
def test_several_samplers_register_every_answer_they_paid_for(tmp_path, method):
    # the host's sampler threads each shut the evaluation pool as they finish; the wrapper
    # keeps it open until the run ends, so no sample under way in another thread is lost
    start_run(_config(tmp_path, method, budget=30, num_samplers=3)).run()
    summary = json.loads((tmp_path / method / "summary.json").read_text())
    calls = summary["llm_usage"]["total"]["calls"]
    template = 1 if method == "hillclimb" else 0  # HillClimb's template is a sample no LLM wrote
    assert summary["samples"] == calls + template >= 30


@pytest.mark.parametrize("host", [HillClimb, RandSample, FunSearch])
def test_from_python_a_generation_is_pop_size_samples_and_the_template_is_a_sample_of_the_budget(host):
    # pop_size went unread (a generation was 10 samples unless generation_size was given), and with one
    # sampler the run took budget + 1 samples: the host does not count its template
    method = robust(host)(llm=OfflineSampler(seed=0, task="ovrp"), evaluation=get_task("ovrp").evaluation(),
                          max_sample_nums=8, pop_size=2, num_samplers=1, seed=0)
    summary = method.run()
    assert summary["finished"] and summary["budget"] == 8
    past = 3 if host is FunSearch else 0  # FunSearch draws 4 samples a prompt
    assert 8 <= summary["samples"] <= 8 + past
    assert summary["generations"] == summary["samples"] // 2
