"""Re-ranking a finished run by robust score, from a plugin run directory or an llm4ad log."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from raise_plugin.cli import main
from raise_plugin.config import RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness.rerank import load_run_programs, rerank, robust_settings, run_nominal_seed
from raise_plugin.programs import ProgramError
from raise_plugin.runner import start_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    start_run(RunConfig(task="ojsp", method="eoh", robust=False, budget=12, pop_size=4, seed=0, out=str(out))).run()
    return out


def test_programs_from_both_kinds_of_folder(run_dir):
    ours = load_run_programs(run_dir)
    host = load_run_programs(run_dir / "host")
    assert len(ours) >= 4 and len(host) >= 4
    assert all(math.isfinite(p.original_score) for p in ours + host)
    with pytest.raises(ProgramError, match="neither"):
        load_run_programs(run_dir / "instances")


def test_robust_scores_include_the_adversarial_instances(run_dir):
    programs = load_run_programs(run_dir)
    out = rerank("ojsp", programs, epsilon=0.005, refreshes=2, top=5, inner_population=4, inner_generations=1,
                 workers=1, progress=False, nominal_seed=run_nominal_seed(run_dir))  # the run's own nominal set
    assert len(out["instances"]) == 5 + 2 and len(out["adversarial"]) == 2
    for p in out["programs"]:
        # on the nominal set alone the robust score would be -nominal_metric: the new instances move it
        assert math.isfinite(p.robust_score) and p.nominal_metric == pytest.approx(-p.original_score)


def test_a_regret_aggregation_scores_against_the_best_baseline_on_each_instance(run_dir):
    from raise_plugin.programs import compile_priority
    from tasks import get_task

    out = rerank("ojsp", load_run_programs(run_dir), epsilon=0.005, refreshes=1, top=3, inner_population=4,
                 inner_generations=1, workers=1, progress=False, aggregation="regret:min")
    fresh = get_task("ojsp").evaluation(instances=out["instances"], aggregation="regret:min")
    fresh.nominal_count = 5
    for p in out["programs"]:
        assert p.robust_score == pytest.approx(fresh.evaluate_program(p.code, compile_priority(p.code)))


def test_cli(run_dir, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "raise_plugin.cli", "rerank", str(run_dir), "--task", "ojsp",
                           "--refreshes", "1", "--top", "4", "--suite-instances", "1", "--workers", "1",
                           "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "robust rank" in proc.stdout and (tmp_path / "rerank.md").exists()
    assert "evaluating on" not in proc.stderr  # --no-progress holds for the test-suite evaluation too
    assert (tmp_path / "robust_best_1.py").exists()
    # each program is named by its id in the run (as its summary and select name it), and the report says
    # which eps (the task's: --epsilon not given) and how many instances the refreshes found
    ids = {json.loads(line)["program_id"] for line in (run_dir / "samples.jsonl").read_text().splitlines()}
    names = [line.split(",")[0] for line in (tmp_path / "rerank.csv").read_text().splitlines()[1:]]
    assert len(names) == 4 and set(names) <= ids
    assert "eps 0.002, 1 adversarial instance(s) found in 1 refresh(es), aggregation mean." in (
        tmp_path / "rerank.md").read_text()


TINY = ["--refreshes", "1", "--top", "2", "--inner-population", "2", "--inner-generations", "1",
        "--suite-instances", "1", "--workers", "1", "--no-progress"]


@pytest.mark.parametrize("flags, says", [
    (["--task", "ojsp", "--aggregation", "bogus"], "--aggregation: aggregation 'bogus': use mean, min"),
    (["--task", "ojsp", "--aggregation", "cvar:2"], "--aggregation: aggregation 'cvar:2': cvar alpha must be in"),
    (["--task", "ojsp", "--aggregation", "regret:nosuch:mean"], "--aggregation: task 'ojsp' has no classical baseline "
                                                                "'nosuch'"),
    (["--task", "ojsp", "--epsilon", "5"], "--epsilon: 5 is beyond the largest distance ojsp's distributions"),
    (["--task", "ovrp"], "is a run on ojsp, not ovrp: give --task ojsp")])
def test_a_bad_setting_or_another_task_is_one_line_before_any_work(run_dir, tmp_path, capsys, flags, says):
    assert main(["rerank", str(run_dir), *flags, *TINY, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and says in captured.err and len(captured.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_api_takes_the_task_s_settings_and_refuses_a_bad_one_by_name(run_dir):
    programs = load_run_programs(run_dir)[:2]
    with pytest.raises(UserError, match="^aggregation: aggregation 'bogus'"):
        rerank("ojsp", programs, aggregation="bogus", workers=1, progress=False)
    with pytest.raises(UserError, match="^epsilon: "):
        rerank("ojsp", programs, epsilon=5, workers=1, progress=False)
    from tasks import get_task
    assert robust_settings(get_task("obp"), None, None) == (0.01, "regret:bestfit:min")  # OBP's, not the paper's
    assert robust_settings(get_task("obp"), 0.005, "mean") == (0.005, "mean")


def test_programs_invalid_everywhere_exit_one(tmp_path, capsys):
    """A host log folder records no task: its programs are run on the task given, and when every one is
    invalid everywhere the command says so and fails."""
    samples = tmp_path / "log" / "samples"
    samples.mkdir(parents=True)
    records = [{"sample_order": i, "algorithm": "x", "score": -1.0 - i,
                "function": f"def priority(customer_features, candidate_insertions):\n    raise ValueError('no {i}')"}
               for i in range(3)]
    (samples / "samples_1~200.json").write_text(json.dumps(records))
    assert main(["rerank", str(tmp_path / "log"), "--task", "ovrp", *TINY]) == 1
    captured = capsys.readouterr()
    assert "invalid on every instance" in captured.err and "p000" in captured.out


def test_a_run_directory_names_its_own_task_and_a_host_log_folder_must_be_given_one(run_dir, tmp_path, capsys):
    assert main(["rerank", str(run_dir), *TINY, "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "rerank.md").read_text().startswith(f"# Robust re-ranking of {run_dir} on ojsp\n")
    capsys.readouterr()
    assert main(["rerank", str(run_dir / "host"), *TINY]) == 0  # a host log inside a run directory: the run's task
    assert f"programs of {run_dir / 'host'}" in capsys.readouterr().out
    (tmp_path / "log" / "samples").mkdir(parents=True)
    assert main(["rerank", str(tmp_path / "log"), *TINY]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"raise-ahd: error: --task: {tmp_path / 'log'} records no task (an llm4ad log folder, or no run "
                   "at all): give the task its programs were written for")


def _copy(run_dir, tmp_path):
    import shutil
    shutil.copytree(run_dir, tmp_path / "r")
    return tmp_path / "r"


@pytest.mark.parametrize("damage, says", [
    (lambda s: s.write_text(json.dumps({**json.loads(s.read_text()), "finished": False})), "{run}: the run has not "
     "finished (raise-ahd resume {run})"),
    (lambda s: s.unlink(), "{run}: the run has not finished (raise-ahd resume {run})"),
    (lambda s: s.write_text("{garbage"), "{run}/summary.json is damaged (not valid JSON at line 1 column 2); resume "
     "the run to write it again (raise-ahd resume {run})"),
    (lambda s: s.write_text("[]"), "{run}/summary.json is damaged (a JSON list, not an object of fields); resume the "
     "run to write it again (raise-ahd resume {run})")])
def test_an_unfinished_run_or_a_damaged_summary_is_refused_in_one_line_as_select_refuses_it(run_dir, tmp_path, capsys,
                                                                                             damage, says):
    """A run killed partway, or one whose summary.json was lost or garbled, was re-ranked without a word."""
    run = _copy(run_dir, tmp_path)
    damage(run / "summary.json")
    assert main(["rerank", str(run), *TINY]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"raise-ahd: error: {says.format(run=run)}\n"
    assert main(["select", str(run), "--workers", "1"]) == 2
    assert capsys.readouterr().err == captured.err
    assert main(["rerank", str(run / "host"), *TINY]) == 2  # its host log is the unfinished run's, refused alike
    assert capsys.readouterr().err == captured.err


def test_a_missing_folder_and_a_damaged_config_are_named_as_such(run_dir, tmp_path, capsys):
    """Both were "records no task (an llm4ad log folder, or no run at all)"."""
    assert main(["rerank", str(tmp_path / "nosuchdir"), *TINY]) == 2
    assert capsys.readouterr().err == (f"raise-ahd: error: {tmp_path / 'nosuchdir'} is neither a run directory nor an "
                                       "llm4ad log folder (no such directory)\n")
    run = _copy(run_dir, tmp_path)
    (run / "config.json").write_text('{"task": "ojsp",\n')
    for task in ([], ["--task", "ojsp"]):
        assert main(["rerank", str(run), *task, *TINY]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"raise-ahd: error: {run / 'config.json'} is damaged (not valid JSON at line 2 column 1)"
                              ) and err.endswith("restore it from a copy\n") and len(err.splitlines()) == 1


def test_a_failing_program_is_shown_invalid_with_its_reason_and_a_damaged_record_is_counted(run_dir, tmp_path, capsys):
    """Failing programs showed metric inf and score -inf with no reason, and a record whose program was not
    text vanished from the count without notice."""
    run = _copy(run_dir, tmp_path)
    lines = (run / "samples.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    best = sorted((i for i, r in enumerate(records) if r["score"] is not None), key=lambda i: -records[i]["score"])
    raises, garbled, not_text = best[:3]
    records[raises]["program"] = ("def priority(current_time, candidate_operations):\n"
                                  "    raise ValueError('tampered')\n")
    records[garbled]["program"] = "def priority(current_time, candidate_operations)\n    return 1\n"
    records[not_text]["program"] = 12345
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["rerank", str(run), *TINY, "--top", "4"]) == 0
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if "warning" in line] == [
        f"raise-ahd: warning: {run}: skipped 1 record(s) that hold no program text with a score "
        f"(line {not_text + 1}); the others are re-ranked"]
    rows = {line.split()[0]: line.split() for line in captured.out.splitlines() if line[:12] in (
        records[raises]["program_id"], records[garbled]["program_id"])}
    for pid, why in ((records[raises]["program_id"], "priority raised ValueError: tampered"),
                     (records[garbled]["program_id"], "syntax error at line 1")):
        assert rows[pid][-3:-1] == ["invalid", "invalid"]  # nominal metric and robust score, as evaluate shows them
        ranked_on = " of the nominal set and the adversarial ones: "
        reason = [line for line in captured.out.splitlines()
                  if line.startswith(f"{pid}: invalid on ") and ranked_on in line]
        assert len(reason) == 1 and why in reason[0]
    assert " inf " not in captured.out and "-inf" not in captured.out


def test_an_attacked_program_runs_in_its_own_process_never_in_the_worker_that_searches():
    """A re-rank's searches ran the attacked program in the worker itself: one that patched the task there
    (every instance 0.0) made its search report the metric 0.0, and every later search in that worker
    searched a task that scored nothing. They run in program processes, as a run's do."""
    from raise_plugin.harness.rerank import RankedProgram

    cheapest = "def priority(customer_features, candidate_insertions):\n    return -candidate_insertions[:, 2]\n"
    patches = ("def priority(customer_features, candidate_insertions):\n    import tasks.ovrp\n"
               "    tasks.ovrp.OVRPTask.evaluate = lambda *args: 0.0\n    return -candidate_insertions[:, 2]\n")

    def found(code):
        out = rerank("ovrp", [RankedProgram("p", code, 1.0)], epsilon=0.01, refreshes=2, top=1, inner_population=4,
                     inner_generations=1, workers=1, progress=False)
        return [f["metric"] for f in out["adversarial"]]

    honest = found(cheapest)
    assert len(honest) == 2 and min(honest) > 1.0
    assert found(patches) == honest  # its decisions are the cheapest insertion's
