"""The plugin from one import: tasks, methods, the harness, statistics and figures, with no
need to import the top-level ``tasks`` package (which a user's tasks.py could hide)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import raise_plugin as rp

ROOT = Path(__file__).resolve().parents[1]


def test_one_import_exposes_tasks_methods_the_harness_statistics_and_figures():
    assert rp.get_task("knapsack").name == "knapsack"
    import raise_plugin.robust.core  # noqa: F401 - the subpackage imported: rp.robust stays the function
    assert callable(rp.robust) and rp.robust.__module__.startswith("raise_plugin.robust")
    assert callable(rp.compare) and callable(rp.run_compare) and callable(rp.profile)
    assert rp.get_method("moh").__name__ == "MoH" and rp.get_method("eohs").__name__ == "EoHS"
    assert callable(rp.stats.compare_paired) and callable(rp.figures.plot_convergence)
    assert callable(rp.paper_tables.build_table) and callable(rp.significance.significance_summary)
    assert issubclass(rp.HostTask, rp.Task) and rp.ShiftDimension("x", 4).cells == 4
    assert set(rp.__all__) <= set(dir(rp))


def test_a_tasks_py_in_the_working_directory_does_not_hide_the_plugin(tmp_path):
    (tmp_path / "tasks.py").write_text("raise RuntimeError('the notebook author\\'s own tasks.py')\n")
    code = "import raise_plugin as rp; print(rp.get_task('cvrp').name)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.strip() == "cvrp"
    (tmp_path / "tasks.py").write_text("NAME = 'mine'\n")
    proc = subprocess.run([sys.executable, "-c", "import tasks, raise_plugin"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode != 0 and "hides the plugin's task package; rename it" in proc.stderr


NUMBERS = ("samples", "budget", "generations", "refreshes", "instance_set_version", "finished", "stopped")


def test_run_returns_its_summary_and_a_resumed_run_returns_its_own(tmp_path):
    config = rp.RunConfig(task="knapsack", robust=True, budget=8, pop_size=4, tau=1, epsilon=0.002,
                          validation_trace=False, out=str(tmp_path / "run"))
    method = rp.start_run(config)
    summary = method.run()
    assert isinstance(summary, dict) and summary["finished"] is True
    again = method.summary(finished=True)
    assert {k: summary[k] for k in NUMBERS} == {k: again[k] for k in NUMBERS}
    assert summary["samples"] == 8 and summary["refreshes"] >= 1
    assert summary["best"] == again["best"] and summary["best"]["robust_score"] is not None
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {k: on_disk[k] for k in NUMBERS} == {k: summary[k] for k in NUMBERS}
    resumed = rp.resume_run(tmp_path / "run", budget=12)
    more = resumed.run()
    assert more["samples"] == 12 and more["budget"] == 12 and more["finished"] is True
    assert more["samples"] == resumed.summary()["samples"]


def test_profile_from_python_returns_the_points_and_writes_the_report_when_told(tmp_path):
    heuristic = tmp_path / "nearest.py"
    heuristic.write_text(rp.get_task("ovrp").template_program)
    profile = rp.profile("ovrp", [heuristic, "SP-Insert"], epsilons=[0.01, 0.003], adversary_seeds=2,
                         inner_population=4, inner_generations=1, projection="sphere", workers=1, progress=False)
    assert profile.heuristics() == ["nearest", "SP-Insert"] and profile.epsilons == [0.003, 0.01]
    assert len(profile.points) == 2 * 2 * 2 and profile.seeds == [0, 1]
    for p in profile.points:
        assert p.distance <= p.epsilon + 1e-9 and p.metric >= 0
    assert list(tmp_path.iterdir()) == [heuristic]  # no out: nothing written
    # any of the task's classical rules, by name in any case, as `evaluate` takes them (not only the paper's)
    one = rp.profile("ovrp", "cheapestinsertion", epsilons=0.003, adversary_seeds=[5], inner_population=4,
                     inner_generations=1, workers=1, progress=False, out=tmp_path / "out")
    assert [(p.heuristic, p.epsilon, p.seed) for p in one.points] == [("CheapestInsertion", 0.003, 5)]
    assert {f.name for f in (tmp_path / "out").iterdir()} == {"profile.json", "profile.md", "profile.png",
                                                               "worst_distributions_CheapestInsertion.png"}
    assert json.loads((tmp_path / "out" / "profile.json").read_text())["points"][0]["seed"] == 5
    # numpy's numbers as Python's: each was refused as 'must be an integer, got np.int64(1)'
    counted = rp.profile("ovrp", "SP-Insert", epsilons=np.float64(0.003), adversary_seeds=np.int64(1),
                         inner_population=np.int64(4), inner_generations=np.int64(1), workers=1, progress=False)
    listed = rp.profile("ovrp", "SP-Insert", epsilons=0.003, adversary_seeds=np.arange(1), inner_population=4,
                        inner_generations=1, workers=1, progress=False)
    assert counted.seeds == listed.seeds == [0] and type(listed.seeds[0]) is int


@pytest.mark.parametrize("keywords, message", [
    ({"task": "tsp"}, "unknown task 'tsp'"),
    ({"heuristics": ["nope"]}, "neither a file or directory nor a baseline of ovrp"),
    ({"heuristics": [Path("nope")]}, r"^heuristics: 'nope' is neither .* \(NF-Insert, SP-Insert, UW-Insert, Cheap"),
    ({"heuristics": []}, "nothing to profile"),
    ({"heuristics": ["SP-Insert", "sp-insert"]}, "SP-Insert named twice"),
    ({"epsilons": 0}, "epsilons: give one or more positive radii"),
    ({"epsilons": 5.0}, "beyond the largest distance"),
    ({"adversary_seeds": 0}, "adversary_seeds"),
    ({"inner_population": 1}, "inner_population: must be >= 2"),
    ({"projection": "cube"}, "projection: must be one of paper, sphere, none"),
    ({"projection": "none"}, "a profile searches with projection paper or sphere"),
    ({"adversary_objective": "regret"}, "adversary_objective metric or regret:baselines, got 'paper' and 'regret'"),
    ({"adversary_objective": ["metric"]}, r"regret:baselines, got 'paper' and \['metric'\]$"),  # a TypeError
    ({"workers": 0}, "workers: must be >= 1"),
    ({"timeout": -1}, "timeout: must be > 0"),
    ({"epsilons": [0.002, 0.01, 0.002]}, "^epsilons: 0.002 given twice$"),  # it searched the radius once, silently
])
def test_profile_refuses_bad_input_in_one_line(keywords, message):
    given = {"task": "ovrp", "heuristics": ["SP-Insert"], "progress": False, **keywords}
    with pytest.raises(rp.UserError, match=message) as caught:
        rp.profile(given.pop("task"), given.pop("heuristics"), **given)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("call, kind, message", [
    (lambda: rp.get_task("tsp"), KeyError, "^unknown task 'tsp'; registered: cvrp, knapsack, obp, ojsp, ovrp$"),
    (lambda: rp.get_method("gpt"), KeyError, "^unknown method 'gpt'; registered: eoh, "),
    (lambda: rp.AdversarialInstanceCallback(epsilon=-1), ValueError, "^epsilon: must be > 0, got -1$")])
def test_a_bad_name_or_setting_is_a_user_error_and_still_the_error_python_expects(call, kind, message):
    """api.md: a bad argument is a UserError (one line; the command line exits 2); a lookup stays a
    KeyError and a bad setting a ValueError for the code that catches those."""
    with pytest.raises(rp.UserError, match=message) as caught:
        call()
    assert isinstance(caught.value, kind)


def _ovrp_datasets():
    return rp.get_task("ovrp").validation_suite()


@pytest.mark.parametrize("call, message", [
    (lambda out: rp.start_run({"task": "ovrp"}), r"^start_run takes a RunConfig .*got dict$"),
    (lambda out: rp.start_run(rp.RunConfig(task="ovrp", budget=4, tau=1, out=str(out)), llm="offline"),
     r"^llm: give a back-end object .*got 'offline'$"),
    (lambda out: rp.compare("ovrp", runs={"budget": 4}), r"^runs: give a RunConfig, or its settings as keywords"),
    (lambda out: rp.compare("ovrp", budget=8, pop_size=4, tau=1, seeds=1, out=str(out.parent / "afile"),
                            progress=False), r"^out: not a directory, got '.*afile'$"),
    (lambda out: rp.run_compare(rp.CompareConfig(task="ovrp", budget=4, pop_size=2, tau=1, seeds=(0,), out=str(out)),
                                progress="maybe"),  # every run trained, then every suite evaluation failed saying so
     r"^progress: must be true, false or one of auto, bar, lines, off, got 'maybe'$"),
    (lambda out: rp.evaluate_suite("ovrp", [rp.Heuristic("a", baseline="SP-Insert")], _ovrp_datasets()[0]),
     r"^datasets: give a list of Datasets .*got Dataset$"),
    (lambda out: rp.evaluate_suite("ovrp", [rp.Heuristic("a", baseline="SP-Insert")], _ovrp_datasets()[:1],
                                   timeout=0), r"^timeout: must be > 0 seconds, got 0$"),
    (lambda out: rp.evaluate_suite("obp", [rp.Heuristic("a", baseline="BestFit")], _ovrp_datasets()[:1]),
     r"^datasets: beta_V\d+ is not obp's \(its instances are not the task's; give the task's validation_suite"),
    *[(lambda out, kw=kw, h=heuristic: rp.profile("ovrp", [h], epsilons=[0.002], progress=False, **kw), said)
      for heuristic, kw, said in (  # a seed twice read as a spread of 0; -1 failed every search; True was 1
          ("SP-Insert", {"adversary_seeds": [0, 0]}, r"^adversary_seeds: 0 given twice$"),
          ("SP-Insert", {"adversary_seeds": [-1]}, r"^adversary_seeds: give a count of at least 1, or seeds"),
          ("SP-Insert", {"adversary_seeds": True}, r"^adversary_seeds: give a count of at least 1, or the seeds"),
          ("SP-Insert", {"adversary_seeds": 10**11}, r"^adversary_seeds: must be at most 1000 seeds, got 100000000000$"),
          ("SP-Insert", {"adversary_seeds": list(range(1001))}, r"^adversary_seeds: must be at most 1000 seeds"),
          ("SP-Insert", {"out": 123}, r"^out: give a folder's path, got 123$"),  # a TypeError
          (None, {}, r"^heuristics: give each as a file, a baseline's name or a Heuristic, got None$"))],
    (lambda out: rp.RunConfig(task="ovrp", bogus=1), r"^RunConfig: unknown field 'bogus'$"),  # a plain TypeError
    (lambda out: rp.resume_run(None), r"^resume_run takes a run directory's path, got None$"),  # a TypeError
    (lambda out: rp.resume_run(5), r"^resume_run takes a run directory's path, got 5$"),
    (lambda out: rp.robust(rp.get_method("eoh"), callbacks=[5]),  # each hook then failed, logged, all run long
     r"^callbacks: 5 has no on_run_start: subclass raise_plugin.robust.Callback$"),
    (lambda out: rp.robust(rp.get_method("eoh"), callbacks=rp.AdversarialInstanceCallback(epsilon=0.002)),
     r"^callbacks: give a list of Callbacks, got AdversarialInstanceCallback$")])
def test_a_wrong_argument_to_the_api_is_one_line_and_writes_nothing(tmp_path, call, message):
    """Each gave an AttributeError, TypeError, ValueError or FileExistsError from deep inside."""
    (tmp_path / "afile").write_text("")
    with pytest.raises(rp.UserError, match=message) as caught:
        call(tmp_path / "out")
    assert "\n" not in str(caught.value) and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


class NotAMethod:
    pass


@pytest.mark.parametrize("call, kind, message", [
    (lambda: rp.robust(42), TypeError, r"^method_cls: robust\(\) takes a method class \(EoH, FunSearch, .*got int 42$"),
    (lambda: rp.robust("eoh"), TypeError, r"^method_cls: robust\(\) takes a method class .*got str 'eoh'$"),
    (lambda: rp.robust(NotAMethod), TypeError, r"^method_cls: robust\(\) cannot wrap NotAMethod: it keeps neither"),
    (lambda: rp.run_compare(42), TypeError, r"^config: run_compare takes a CompareConfig \(rp.CompareConfig\(...\)\), "
                                            r"got int; rp.compare\(...\) takes its fields as keywords$"),
    (lambda: rp.profile(42, ["SP-Insert"]), TypeError, "^task: give a task, its name or a file or module reference, "
                                                       "got int 42$"),
    (lambda: rp.profile("ovrp", 42), rp.UserError, "^heuristics: give each as a file, a baseline's name or a "
                                                   "Heuristic, got 42$"),
    (lambda: rp.make_llm("offline", record=42), TypeError, "^record: give the JSONL file to record to, got int 42$"),
    (lambda: rp.make_llm("offline", seed="x"), ValueError, "^seed: must be an integer, got 'x'$"),
    (lambda: rp.make_llm("offline", seed=-1), ValueError, "^seed: must be >= 0, got -1$"),
    (lambda: rp.register_task(42), TypeError, "^task: register_task takes a tasks.Task or a Task subclass, got int 42$"),
    (lambda: rp.register_task(rp.Task), TypeError, "^task: Task leaves evaluate, .* undefined: register a subclass"),
    (lambda: rp.RunLog.load(42), TypeError, "^path: RunLog.load takes a run directory's path, got int 42$"),
    (lambda: rp.get_task("ovrp").evaluation(aggregation="foo"), ValueError, "^aggregation 'foo': use mean, min"),
    *[(lambda kw=kw: rp.get_method("gp")(llm=rp.make_llm("offline"), evaluation=rp.get_task("ovrp").evaluation(),
                                         max_sample_nums=4, pop_size=2, **kw), kind, said)
      for kw, kind, said in (
          ({"crossover_rate": 2.0}, ValueError, "^GP: crossover_rate: must be a number from 0 to 1, got 2.0$"),
          ({"tournament_size": 0}, ValueError, "^GP: tournament_size: must be a whole number >= 1, got 0$"),
          ({"max_height": -1}, ValueError, "^GP: max_height: must be a whole number >= 1, got -1$"),
          ({"bogus": 1}, TypeError, "^GP: unknown field 'bogus'$"))]])  # accepted silently
def test_an_entry_point_refuses_a_wrong_argument_in_one_line_naming_it(call, kind, message):
    """Each was a bare TypeError, AttributeError or ValueError from inside (or, for GP's unknown keyword,
    nothing); each is a UserError now, and still the error Python code would catch."""
    with pytest.raises(rp.UserError, match=message) as caught:
        call()
    assert isinstance(caught.value, kind) and "\n" not in str(caught.value)


def test_a_run_s_paths_may_be_path_objects_and_are_recorded_as_their_text(tmp_path):
    """``RunConfig(out=Path(...))`` was refused: "config field 'out': must be a string, got PosixPath(...)"."""
    config = rp.RunConfig(task="ovrp", out=tmp_path / "run", record=tmp_path / "answers.jsonl")
    assert (config.out, config.llm.record) == (str(tmp_path / "run"), str(tmp_path / "answers.jsonl"))
    assert config.to_dict() == rp.RunConfig(task="ovrp", out=str(tmp_path / "run"),
                                            record=str(tmp_path / "answers.jsonl")).to_dict()


def test_a_run_on_another_task_is_not_profiled_and_a_task_object_is_evaluated(tmp_path):
    """profile scored a knapsack run's program on OBP (inf, "priority raised IndexError"); evaluate_suite
    said "unknown task <Task ovrp>" of the task profile takes."""
    rp.start_run(rp.RunConfig(task="ovrp", budget=4, pop_size=2, tau=1, out=str(tmp_path / "run"))).run()
    with pytest.raises(rp.UserError, match=r"^.*run is a run on ovrp, not obp: give --task ovrp$"):
        rp.profile("obp", [str(tmp_path / "run")], progress=False)
    task = rp.get_task("ovrp")
    rows = rp.evaluate_suite(task, [rp.Heuristic("a", baseline="SP-Insert")], task.validation_suite()[:1],
                             workers=1, progress=False)
    assert [r.heuristic for r in rows] == ["a", "a"] and all(r.valid for r in rows)


def test_every_exported_name_is_described_in_the_api_reference():
    page = (ROOT / "docs" / "api.md").read_text()
    missing = [name for name in rp.__all__ if f"`{name}" not in page and f"`rp.{name}" not in page]
    assert not missing, f"docs/api.md does not describe {missing}"
    assert "docs/api.md" in (ROOT / "README.md").read_text()
