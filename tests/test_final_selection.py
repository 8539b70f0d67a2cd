"""The final selection on the validation suite: the member of a run's last population best there."""
from __future__ import annotations

import json
import shutil

import pytest

import raise_plugin.validation as validation
from raise_plugin.cli import main
from raise_plugin.config import RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness.compare import run_compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.runner import start_run
from raise_plugin.validation import select_final, validation_metrics
from tasks import get_task


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    start_run(RunConfig(task="ovrp", budget=16, pop_size=4, tau=1, inner_population=4, inner_generations=1,
                        out=str(out), host_profiler=False, validation_trace=False)).run()
    return out


def test_the_chosen_program_is_the_candidate_best_on_the_validation_suite(finished_run, tmp_path, monkeypatch):
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    task = get_task("ovrp")
    chosen = select_final(run, task, workers=1)
    candidates = {c["program_id"] for c in chosen["candidates"]}
    summary = json.loads((run / "summary.json").read_text())
    last = [json.loads(line) for line in (run / "population.jsonl").read_text().splitlines()][-1]
    assert summary["best"]["program_id"] in candidates and chosen["robust_best"] == summary["best"]["program_id"]
    assert {m["program_id"] for m in last["members"]} <= candidates
    programs = {json.loads(line)["program_id"]: json.loads(line)["program"]
                for line in (run / "samples.jsonl").read_text().splitlines()}
    fresh = validation_metrics(task, {pid: programs[pid] for pid in candidates}, per_dataset=1, workers=1)
    assert chosen["validation_metric"] == pytest.approx(min(s["metric"] for s in fresh.values()))
    assert fresh[chosen["program_id"]]["metric"] == pytest.approx(chosen["validation_metric"])
    assert chosen["program"] == programs[chosen["program_id"]]
    metrics = [c["validation_metric"] for c in chosen["candidates"]]
    assert metrics == sorted(metrics)
    # recorded: asked again, nothing is evaluated
    assert json.loads((run / "selection.json").read_text()) == chosen
    monkeypatch.setattr(validation, "validation_metrics",
                        lambda *a, **k: pytest.fail("a recorded selection was evaluated again"))
    assert select_final(run, task, workers=1) == chosen


def test_the_select_command_prints_the_candidates_and_writes_the_program(finished_run, tmp_path, capsys):
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    assert main(["select", str(run), "--workers", "1", "--out", str(tmp_path / "chosen.py")]) == 0
    out = capsys.readouterr().out
    chosen = json.loads((run / "selection.json").read_text())
    assert "<- chosen" in out and chosen["program_id"] in out
    assert (tmp_path / "chosen.py").read_text() == chosen["program"]


def test_the_select_command_makes_the_folders_on_the_way_to_its_out(finished_run, tmp_path, capsys):
    """It chose and recorded the program, then ended 'raise-ahd: error: No such file or directory: ...', exit 1."""
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    out = tmp_path / "new" / "folder" / "chosen.py"
    assert main(["select", str(run), "--workers", "1", "--out", str(out)]) == 0
    assert out.read_text() == json.loads((run / "selection.json").read_text())["program"]
    assert f"program written to {out}" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["select", "{tmp}/nowhere"], "not a run directory"),
    (["select", "{run}", "--per-dataset", "0"], "--per-dataset"),
    (["select", "{run}", "--out", "{tmp}"], ": is a directory"),  # before the suite is run, not after
])
def test_select_refuses_bad_input_in_one_line(finished_run, tmp_path, capsys, argv, message):
    argv = [a.format(tmp=tmp_path, run=finished_run) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_select_refuses_a_damaged_config_in_one_line(tmp_path, capsys):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "config.json").write_text("{not json")
    assert main(["select", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "config.json is damaged" in err


def test_select_refuses_a_config_lacking_the_task_in_one_line(finished_run, tmp_path, capsys):
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    config = json.loads((run / "config.json").read_text())
    del config["task"]
    (run / "config.json").write_text(json.dumps(config))
    assert main(["select", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "config.json lacks 'task', which every run records" in err, err
    assert not (run / "selection.json").exists()


def test_select_refuses_an_unfinished_run(finished_run, tmp_path, capsys):
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "finished": False}))
    assert main(["select", str(run)]) == 2
    assert "has not finished" in capsys.readouterr().err


@pytest.mark.parametrize("text, says", [
    ("garbage", "summary.json is damaged (not valid JSON at line 1 column 1); resume the run to write it again"),
    ("[]", "summary.json is damaged (a JSON list, not an object of fields); resume the run"),
    ('{"finished": true}', "summary.json records no best program: it is damaged; resume the run")])
def test_select_names_a_damaged_summary_and_its_fix_in_one_line(finished_run, tmp_path, capsys, text, says):
    """It was a traceback (JSONDecodeError, AttributeError), or "the run has no valid program" of a run
    whose population was whole."""
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    (run / "summary.json").write_text(text)
    assert main(["select", str(run), "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err and f"(raise-ahd resume {run})" in err


def test_compare_can_hand_every_run_s_validation_choice_to_the_report(tmp_path):
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(0.002,), budget=4, pop_size=2, seeds=(0,),
                           out=str(tmp_path / "c"), tau=1, inner_population=4, inner_generations=1,
                           suite_instances=1, nominal=1, workers=1, select_on="validation")
    result = run_compare(config, quiet=True)
    out = tmp_path / "c"
    for key in ("eoh-plain", "eoh-raise-eps0.002"):
        chosen = json.loads((out / "runs" / f"{key}-seed0" / "selection.json").read_text())
        assert (out / "results" / f"{key}-seed0-validation-selected.csv").exists()
        assert not (out / "results" / f"{key}-seed0.csv").exists()
        assert chosen["select_on"] == "validation"
    assert "best metric on the validation suite" in (out / "report.md").read_text()
    assert result.tables


def test_compare_refuses_to_select_on_the_test_suite(tmp_path):
    with pytest.raises(UserError, match=r"^select_on='test' refused: the test suite is for the final report only"):
        CompareConfig(task="ovrp", out=str(tmp_path / "c"), select_on="test")


def test_candidates_carry_their_score_on_the_run_s_final_instance_set(finished_run, tmp_path):
    """A refresh in the last generation re-scores the population after it was recorded: the
    selection shows the scores on the final set, so the robust best has the highest."""
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    chosen = select_final(run, get_task("ovrp"), workers=1)
    scores = {c["program_id"]: c["robust_score"] for c in chosen["candidates"]}
    summary = json.loads((run / "summary.json").read_text())
    assert scores[chosen["robust_best"]] == pytest.approx(summary["best"]["robust_score"])
    assert scores[chosen["robust_best"]] == max(scores.values())


def test_the_task_decides_what_compare_hands_on_unless_told(monkeypatch):
    from tasks import list_tasks
    assert {CompareConfig(task=t).study.select_on for t in list_tasks()} == {"robust"}  # every task's default
    monkeypatch.setattr(type(get_task("obp")), "final_selection", "validation")  # a task that says otherwise
    assert CompareConfig(task="obp").study.select_on == "validation"
    assert CompareConfig(task="obp", select_on="robust").study.select_on == "robust"
    assert CompareConfig(task="ovrp").study.select_on == "robust"
    from raise_plugin.commands.compare import PRESETS
    # the presets that reproduce a table measured on robust bests say so, whatever the task's default
    assert PRESETS["paper-obp"]["select_on"] == PRESETS["obp-validated"]["select_on"] == "robust"


def _copy(finished_run, tmp_path):
    import shutil
    run = tmp_path / "r"
    shutil.copytree(finished_run, run)
    return run


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("raise-ahd: warning: ")]


@pytest.mark.parametrize("damaged, says", [
    (b"{oops", "not valid JSON"), (b"[1]", "not a JSON object"), (b"\xff\xfe", "not valid JSON"),
    (b'{"per_dataset": 1, "samples": 16, "program_id": "FORGED", "program": "print(1)"}',
     "its robust_best, candidates missing or malformed")])
def test_a_damaged_recorded_selection_is_said_in_one_line_kept_and_made_again(finished_run, tmp_path, capsys,
                                                                                damaged, says):
    """It was a traceback (JSONDecodeError, AttributeError, UnicodeDecodeError, KeyError)."""
    run = _copy(finished_run, tmp_path)
    (run / "selection.json").write_bytes(damaged)
    assert main(["select", str(run), "--workers", "1"]) == 0
    captured = capsys.readouterr()
    assert _warnings(captured.err) == [
        f"raise-ahd: warning: {run / 'selection.json'} is damaged ({says}); the program is chosen again and the "
        "file replaced (the original is kept as selection.json.damaged)"]
    assert (run / "selection.json.damaged").read_bytes() == damaged
    chosen = json.loads((run / "selection.json").read_text())
    assert chosen["program_id"] in captured.out and len(chosen["candidates"]) > 1


@pytest.mark.parametrize("name", ["summary.json", "config.json", "samples.jsonl", "chosen.py", "host/chosen.py"])
def test_select_refuses_an_out_inside_the_run_directory(finished_run, tmp_path, capsys, name):
    """An --out naming summary.json or config.json replaced it with the program: every later command
    then called the run damaged."""
    run = _copy(finished_run, tmp_path)
    before = {f: f.read_bytes() for f in run.rglob("*") if f.is_file()}
    assert main(["select", str(run), "--workers", "1", "--out", str(run / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"raise-ahd: error: --out {run / name}: is inside the run directory {run}, which holds only the "
                   f"run's own records; write the program outside it (the choice is recorded in "
                   f"{run / 'selection.json'})")
    assert {f: f.read_bytes() for f in run.rglob("*") if f.is_file()} == before


def _cut_to_first_line(path):
    path.write_text(path.read_text().splitlines()[0] + "\n")


@pytest.mark.parametrize("damage, unread", [
    (lambda p: p.unlink(), "population.jsonl is missing"),
    (lambda p: p.write_text(""), "population.jsonl holds no readable generation record"),
    (lambda p: p.write_text("not json\n"), "population.jsonl holds no readable generation record"),
    (_cut_to_first_line, "population.jsonl's last readable record is generation 1 of "),
])
def test_a_last_population_that_cannot_be_read_is_said_and_recorded(finished_run, tmp_path, capsys, damage, unread):
    """The choice was among the robust best alone (or an earlier generation), said to be made on the
    validation suite, without a word."""
    run = _copy(finished_run, tmp_path)
    damage(run / "population.jsonl")
    assert main(["select", str(run), "--workers", "1"]) == 0
    chosen = json.loads((run / "selection.json").read_text())
    said = _warnings(capsys.readouterr().err)
    assert len(said) == 1 and f"{run}: the run's last population cannot be read ({unread}" in said[0]
    assert f"chosen among the {len(chosen['candidates'])} candidate(s) read, not the whole population" in said[0]
    assert unread in chosen["unread"]
    # asked again, it is chosen again (and said again): once the records are restored, among them all
    shutil.copy(finished_run / "population.jsonl", run / "population.jsonl")
    assert main(["select", str(run), "--workers", "1"]) == 0
    assert _warnings(capsys.readouterr().err) == []
    again = json.loads((run / "selection.json").read_text())
    last = json.loads((run / "population.jsonl").read_text().splitlines()[-1])
    assert "unread" not in again and {m["program_id"] for m in last["members"]} <= {
        c["program_id"] for c in again["candidates"]}
