"""The validation trace: the best program's validation metric during a run, cached, written, resumable."""
from __future__ import annotations

import json

import numpy as np
import pytest
from llm4ad.method.eoh import EoH

from robust_helpers import ScriptedLLM, small_obp_evaluation
from raise_plugin.robust import robust
from raise_plugin.rundir.writer import RunDirectory
from raise_plugin.validation import (ValidationTrace, read_trace, run_workers, trace_run_directory,
                                     validation_metrics)
from tasks import get_task
from tasks.common.classical import best_on_validation


def test_validation_metrics_match_a_direct_evaluation_on_the_validation_suite():
    task = get_task("obp")
    code = "import numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n"
    scores = validation_metrics(task, {"bf": code}, per_dataset=1, baselines=["BestFit", "FirstFit"], workers=1)
    direct = {d.family: task.evaluate(task.baselines["BestFit"], d.instances[0]) for d in task.validation_suite(1)}
    suite = task.validation_suite(1)
    expected = np.mean([task.evaluate(task.baselines["BestFit"], d.instances[0]) for d in suite])
    assert scores["BestFit"]["metric"] == pytest.approx(expected)
    assert scores["bf"]["metric"] == pytest.approx(expected)  # best fit written as a program
    assert scores["FirstFit"]["metric"] > scores["BestFit"]["metric"]
    assert set(scores["bf"]["families"]) == set(direct) and scores["bf"]["failures"] == 0


def test_trace_writes_a_point_every_few_generations_and_at_the_end(tmp_path):
    trace = ValidationTrace(every=2, workers=1)
    method = robust(EoH, callbacks=[trace])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(),
                                             max_sample_nums=24, pop_size=4, max_generations=None,
                                             recorder=RunDirectory(tmp_path))
    method.run()
    points = read_trace(tmp_path)
    assert points == json.loads(json.dumps(points)) and len(points) == len(trace.points) >= 3
    generations = [p["generation"] for p in points]
    assert generations == sorted(set(generations))
    assert all(g % 2 == 0 for g in generations[:-1]) and generations[-1] == method.generation
    assert points[-1]["program_id"] == method.snapshot().best.program_id
    # the rule a compare's tables test against, the best of every classical rule on the validation suite, not
    # the best of the paper's two baselines (BestFit), which a figure beside the tables would contradict
    assert points[0]["best_baseline"]["name"] == best_on_validation(get_task("obp")) == "SumOfSquares"
    for p in points:
        assert p["validation_metric"] > 0 and set(p["validation_families"]) == {
            "beta", "gamma", "weibull", "bimodal", "poisson"}
    # a program met twice is evaluated once
    same = [p for p in trace.points if p["program_id"] == points[-1]["program_id"]]
    assert all(p["validation_metric"] == same[0]["validation_metric"] for p in same)


def test_the_trace_measures_on_the_runs_own_workers(tmp_path, monkeypatch):
    # before, each point (and the baselines at the start) started a pool of one worker per core of its own
    from raise_plugin.engine.executors import local
    pools = []
    made = local.ProcessExecutor.__init__
    monkeypatch.setattr(local.ProcessExecutor, "__init__",
                        lambda self, *a, **k: (pools.append(a), made(self, *a, **k))[1])
    trace = ValidationTrace(every=2)
    method = robust(EoH, callbacks=[trace])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(),
                                             max_sample_nums=12, pop_size=4, max_generations=None,
                                             recorder=RunDirectory(tmp_path))
    method.run()
    assert len(pools) == 1 and len(trace.points) >= 2  # the run's own pool, which also ran every point
    # the same numbers as on a pool of their own
    best = {p["program_id"]: p["validation_metric"] for p in trace.points}
    alone = validation_metrics(get_task("obp"), {pid: method.program_text(pid) for pid in best}, per_dataset=1,
                               workers=1)
    assert best == {pid: scores["metric"] for pid, scores in alone.items()}


def test_a_run_on_the_compiled_path_keeps_its_workers_to_itself():
    # its tally (compiled.json) counts the run's own programs: the trace's baselines would be three more
    from types import SimpleNamespace
    from raise_plugin.engine import ProcessExecutor, SandboxLimits
    plain, compiled = ProcessExecutor(1), ProcessExecutor(1, SandboxLimits(jit=True))
    try:
        assert run_workers(SimpleNamespace(engine_executor=plain)) is plain
        assert run_workers(SimpleNamespace(engine_executor=compiled)) is None
        assert run_workers(SimpleNamespace(engine_executor=None)) is None  # programs run in the run's thread
    finally:
        plain.shutdown()
        compiled.shutdown()


def test_trace_of_a_finished_run_directory_names_each_generations_best(tmp_path):
    method = robust(EoH)(llm=ScriptedLLM(1), evaluation=small_obp_evaluation(), max_sample_nums=20, pop_size=4,
                         max_generations=None, recorder=RunDirectory(tmp_path))
    method.run()
    points = trace_run_directory(tmp_path, get_task("obp"), every=2, workers=1)
    assert points and points[-1]["program_id"] == method.snapshot().best.program_id
    assert all(p["best_baseline"]["name"] == "SumOfSquares" for p in points)


def test_trace_settings_are_checked():
    with pytest.raises(ValueError, match="every"):
        ValidationTrace(every=0)
    with pytest.raises(ValueError, match="per_dataset"):
        ValidationTrace(per_dataset=0)


def test_a_trace_given_to_two_runs_traces_each_from_its_start(tmp_path):
    """The second run kept the first's points and last generation: it measured none where the first had."""
    trace = ValidationTrace(every=1, workers=1)
    runs = []
    for name in ("a", "b"):
        robust(EoH, callbacks=[trace])(llm=ScriptedLLM(0), evaluation=small_obp_evaluation(), max_sample_nums=8,
                                       pop_size=4, max_generations=None, recorder=RunDirectory(tmp_path / name)).run()
        runs.append([(p["generation"], p["program_id"], p["validation_metric"]) for p in trace.points])
    assert runs[0] and runs[1] == runs[0]
    assert [p["generation"] for p in read_trace(tmp_path / "b")] == [p[0] for p in runs[0]]


def test_trace_of_a_robust_run_directory_names_the_best_after_each_refresh_as_the_run_traced_it(tmp_path):
    """It named each generation's best by the scores recorded before that generation's refresh re-scored the
    members: its last point was not the program the run hands on (OJSP, GP, seed 0: fcd2d9... for cd6fac...)."""
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import start_run

    run = tmp_path / "run"
    method = start_run(RunConfig(task="ojsp", method="gp", robust=True, tau=1, inner_population=4, inner_generations=1,
                                 budget=16, pop_size=4, nominal=1, seed=0, instance_seed="public", out=str(run),
                                 executor="process:1"))
    method.run()
    traced = [(p["generation"], p["program_id"], p["validation_metric"]) for p in read_trace(run)]
    after = trace_run_directory(run, get_task("ojsp"), every=1, workers=1)
    assert [(p["generation"], p["program_id"], p["validation_metric"]) for p in after] == traced
    assert after[-1]["program_id"] == json.loads((run / "summary.json").read_text())["best"]["program_id"]


@pytest.mark.parametrize("every", [0, -1, 2.5, True])
def test_trace_of_a_run_directory_refuses_an_every_that_is_no_whole_number_of_generations(tmp_path, every):
    """every=0 was a ZeroDivisionError; -1, 2.5 and True traced as if they meant something."""
    with pytest.raises(ValueError, match="every must be an integer >= 1"):
        trace_run_directory(tmp_path, get_task("obp"), every=every)


def test_a_run_killed_after_a_generation_s_point_and_before_its_checkpoint_traces_that_generation_once(tmp_path):
    """The generation's end, fired again on resume, appended a second point for it to validation.jsonl."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from raise_plugin.runner import resume_run

    here = Path(__file__).parent
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, str(here / "robust" / "killed_run.py"), str(out), "generation:2", "eoh",
                           "trace"], env={**os.environ, "PYTHONPATH": str(here.parent)}, capture_output=True,
                          timeout=300)
    assert done.returncode == -signal.SIGKILL
    assert [p["generation"] for p in read_trace(out)] == [1, 2]
    resume_run(out).run()
    generations = [p["generation"] for p in read_trace(out)]
    assert generations == sorted(set(generations)) and generations[:2] == [1, 2]
