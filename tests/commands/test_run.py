"""``raise-ahd run`` and ``raise-ahd resume``: flags, config files, one-line errors, the summary."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from robust_helpers import SMALL_OBP, ScriptedLLM
from raise_plugin import build
from raise_plugin.cli import main
from raise_plugin.commands.run import nothing_evaluated
from raise_plugin.config import ConfigError, RunConfig, SandboxSettings


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(build, "make_llm", lambda llm, seed, task: ScriptedLLM(seed))


def test_run_then_resume_from_the_command_line(tmp_path, scripted, capsys, monkeypatch):
    from tasks import get_task
    # a task that hands on the choice on its validation suite (Task.final_selection)
    monkeypatch.setattr(type(get_task("obp")), "final_selection", "validation")
    out = tmp_path / "run"
    code = main(["run", "--task", SMALL_OBP, "--budget", "12", "--pop-size", "4", "--tau", "2", "--nominal", "1",
                 "--inner-population", "4", "--inner-generations", "2", "--seed", "1", "--out", str(out),
                 "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "samples         12 of 12" in printed and "refreshes       " in printed
    assert f"raise-ahd select {out}" in printed  # where the candidates are shown
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 12 and summary["refreshes"] >= 1
    assert json.loads((out / "config.json").read_text())["seed"] == 1
    # the last population's best on the validation suite is chosen at the end, said and recorded
    selection = json.loads((out / "selection.json").read_text())
    assert selection["samples"] == 12 and selection["robust_best"] == summary["best"]["program_id"]
    assert f"final program   {selection['program_id']}: the last population's best on the validation" in printed
    # the final program, written where the summary says
    assert f"best program    {out / 'best_program.py'}" in printed
    written = (out / "best_program.py").read_text()
    assert written.startswith(f"# {selection['program_id']} of {out}: the last population's best on the validation")
    assert selection["program"].strip() in written
    # docs/robust.md's listing of the run directory names every file and folder the run wrote (it named neither
    # best_program.py nor report.html, the two the summary points to)
    listing = (Path(__file__).parents[2] / "docs" / "robust.md").read_text().split("## The run directory", 1)[1]
    listed = {line.split()[0].split("/")[0] for line in listing.split("```")[1].splitlines()[2:] if line.strip()
              and not line.startswith(" " * 10)}
    assert {p.name for p in out.iterdir()} <= listed, sorted({p.name for p in out.iterdir()} - listed)
    assert main(["resume", str(out), "--budget", "16", "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["samples"] == 16
    again = json.loads((out / "selection.json").read_text())  # chosen again among the resumed run's members
    assert again["samples"] == 16 and f"final program   {again['program_id']}" in capsys.readouterr().out


def test_a_task_that_keeps_the_robust_best_makes_no_selection(tmp_path, scripted, capsys):
    out = tmp_path / "ovrp"
    # the scripted programs are bin packing's: on routing none evaluates, which the run says (exit 3)
    assert main(["run", "--task", "ovrp", "--budget", "6", "--pop-size", "2", "--nominal", "1", "--out", str(out),
                 "--no-progress", "--no-host-profiler", "--inner-population", "2", "--inner-generations", "1",
                 "--tau", "1"]) == 3
    captured = capsys.readouterr()
    printed = captured.out
    assert "initial_sample_nums_max" not in printed + captured.err  # the host's advice: not a setting of a run
    # bound to routing's parameters by position (docs/llm.md, "How an answer is read"), they fail on its arrays
    assert "none of its 4 programs evaluated; 4 failed with: priority raised ValueError: operands could not be " \
           "broadcast" in captured.err
    assert "final program   the best robust above" in printed and not (out / "selection.json").exists()
    assert not (out / "best_program.py").exists() and "best program" not in printed  # no valid program: none written


def test_no_robust_runs_the_same_method_without_the_inner_loop(tmp_path, scripted, capsys):
    out = tmp_path / "plain"
    assert main(["run", "--no-robust", "--budget", "8", "--pop-size", "4", "--nominal", "1", "--out", str(out),
                 "--no-progress", "--no-host-profiler"]) == 0
    best = json.loads((out / "summary.json").read_text())["best"]
    written = (out / "best_program.py").read_text()
    assert written.startswith(f"# {best['program_id']} of {out}: its best program on the nominal set")
    assert best["program"].strip() in written
    summary = json.loads((out / "summary.json").read_text())
    assert summary["refreshes"] == 0 and len(summary["instance_set"]) == 1
    assert not (out / "host").exists()


def test_a_toml_config_with_flags_overriding_it(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[run]\ntask = "obp"\nepsilon = 0.005\ntau = 3\naggregation = "cvar:0.2"\n')
    cfg = RunConfig.from_toml(path, tau=4)
    assert (cfg.adversary.epsilon, cfg.adversary.tau, cfg.adversary.aggregation) == (0.005, 4, "cvar:0.2")


@pytest.mark.parametrize("argv, field", [
    (["--tau", "0"], "tau"),
    (["--epsilon", "-0.1"], "epsilon"),
    (["--budget", "0"], "budget"),
    (["--aggregation", "median"], "aggregation"),
    (["--method", "nope"], "method"),
    (["--task", "nope"], "task"),
    (["--llm", "gpt"], "llm"),
    (["--projection", "cube"], "projection"),
    (["--length", "long"], "length"),
    (["--pop-size", "1"], "pop_size"),
    (["--memory-mb", "8"], "memory_mb"),
    (["--file-mb", "-1"], "file_mb"),
    (["--output-mb", "-0.5"], "output_mb"),
    # a recording that cannot be written: refused before the run, not "Not a directory" once it is built
    (["--record", "{tmp}"], "record"),
    (["--record", "{file}/calls.jsonl"], "record"),
    # an --out that is a file, or where no folder can be made: one line naming it, not "File exists" (exit 1)
    (["--budget", "4", "--allow-no-refresh", "--out", "{file}"], "out"),
    (["--budget", "4", "--allow-no-refresh", "--out", "/proc/run"], "out"),
    (["--budget", "4", "--allow-no-refresh", "--out", "{tmp}/" + "x" * 300], "out"),  # "File name too long", exit 1
])
def test_bad_values_give_one_line_errors_naming_the_field(argv, field, capsys, tmp_path):
    argv = [a.format(tmp=tmp_path, file=__file__) for a in argv]
    assert main(["run", "--out", str(tmp_path / "x"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and (f"'{field}'" in err or f"--{field.replace('_', '-')}:" in err), err
    assert not (tmp_path / "x").exists()


def test_bad_toml_files_give_one_line_errors(tmp_path, capsys):
    unknown = tmp_path / "a.toml"
    unknown.write_text("tua = 3\n")
    assert main(["run", "--config", str(unknown)]) == 2
    assert "unknown field 'tua'" in capsys.readouterr().err
    wrong_type = tmp_path / "b.toml"
    wrong_type.write_text('tau = "five"\n')
    with pytest.raises(ConfigError, match="'tau': must be an integer"):
        RunConfig.from_toml(wrong_type)
    assert main(["run", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "cannot read config file" in capsys.readouterr().err


def test_resume_of_a_missing_run_directory_is_a_one_line_error(tmp_path, capsys):
    assert main(["resume", str(tmp_path / "nothing")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_recorded_run_replays_exactly(tmp_path, capsys):
    record = tmp_path / "llm.jsonl"
    common = ["run", "--task", "ojsp", "--method", "eoh", "--robust", "--budget", "16", "--pop-size", "4",
              "--tau", "2", "--inner-population", "4", "--inner-generations", "1", "--no-progress"]
    assert main(common + ["--record", str(record), "--out", str(tmp_path / "a")]) == 0
    assert main(common + ["--llm", f"replay:{record}", "--out", str(tmp_path / "b")]) == 0

    def programs(run):
        return [json.loads(line)["program"] for line in (tmp_path / run / "samples.jsonl").read_text().splitlines()]

    assert len(record.read_text().splitlines()) == 16
    assert programs("a") == programs("b")
    a, b = (json.loads((tmp_path / r / "summary.json").read_text()) for r in ("a", "b"))
    assert a["best"] == b["best"] and a["instance_set"] == b["instance_set"]


def test_limits_that_fail_the_tasks_own_baseline_stop_the_run_before_it_samples(tmp_path, capsys):
    """A time limit no evaluation can meet: the self-check evaluates best fit on one nominal
    instance under the run's limits and stops the run in one line naming the limit and its flag,
    before any sample (exit 2), not exit 0 with "best none"."""
    out = tmp_path / "nothing"
    code = main(["run", "--task", "obp", "--no-robust", "--budget", "8", "--pop-size", "4", "--nominal", "1",
                 "--timeout", "0.001", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    line = next(line for line in err.splitlines() if line.startswith("raise-ahd: error:"))
    assert "time limit" in line and "BestFit" in line and "--timeout" in line, line
    assert not (out / "samples.jsonl").exists() or not (out / "samples.jsonl").read_text().strip()


def test_the_sandbox_s_limits_given_to_run_are_the_limits_its_workers_start_with(tmp_path, scripted, monkeypatch):
    started = []

    def make_executor(spec, limits=None):
        made = real(spec, limits)
        started.append(made.limits)
        return made

    real = build.make_executor
    monkeypatch.setattr(build, "make_executor", make_executor)
    out = tmp_path / "limited"
    assert main(["run", "--task", "obp", "--no-robust", "--budget", "4", "--pop-size", "2", "--nominal", "1",
                 "--executor", "serial", "--memory-mb", "512", "--file-mb", "2", "--output-mb", "0.5",
                 "--out", str(out), "--no-progress", "--no-host-profiler", "--no-validation-trace"]) == 0
    assert [(l.memory_mb, l.file_mb, l.output_mb) for l in started] == [(512, 2, 0.5)]
    recorded = json.loads((out / "config.json").read_text())
    assert (recorded["memory_mb"], recorded["file_mb"], recorded["output_mb"]) == (512, 2, 0.5)
    # in a TOML file, the sandbox's limits are a table of the engine's
    path = tmp_path / "run.toml"
    path.write_text("[engine.sandbox]\nmemory_mb = 1024\ntimeout = 5.0\n")
    assert RunConfig.from_toml(path).engine.sandbox == SandboxSettings(memory_mb=1024, timeout=5.0)
    assert RunConfig().engine.sandbox_limits() == {}  # the engine's own limits: the run starts no workers of its own


def test_a_search_that_ends_after_its_initial_population_says_why_and_fails(tmp_path, monkeypatch, capsys):
    class OneValid(ScriptedLLM):  # one valid program, then only programs of the wrong shape
        def draw_sample(self, prompt, *args, **kwargs) -> str:
            answer = super().draw_sample(prompt, *args, **kwargs)
            return answer if self.calls == 1 else answer.split("def priority")[0] + \
                "def priority(item, bins):\n    return bins[:1]\n```"

    monkeypatch.setattr(build, "make_llm", lambda llm, seed, task: OneValid(seed, fail_every=0))
    out = tmp_path / "run"
    assert main(["run", "--task", SMALL_OBP, "--budget", "20", "--pop-size", "2", "--tau", "1", "--nominal", "1",
                 "--inner-population", "2", "--inner-generations", "1", "--out", str(out), "--no-progress",
                 "--no-host-profiler"]) == 3
    captured = capsys.readouterr()
    assert "initial_sample_nums_max" not in captured.out + captured.err
    assert ("raise-ahd: error: the run stopped: the search ended after its initial population: 1 of its 4 initial "
            "programs were valid, fewer than the 2 its operators need") in captured.err
    assert json.loads((out / "summary.json").read_text())["samples"] == 4


@pytest.mark.parametrize("method", ["gp", "eoh"])
def test_a_budget_spent_within_the_initial_population_ends_the_run_without_a_failure(tmp_path, capsys, method):
    """A budget of 1 at a population of 5 ran its one sample, then said 'the run stopped: the search ended after
    its initial population: 1 of its 1 initial programs were valid, fewer than the 2 its operators need', exit 3."""
    out = tmp_path / "run"
    assert main(["run", "--task", "ovrp", "--method", method, "--no-robust", "--budget", "1", "--pop-size", "5",
                 "--nominal", "1", "--no-validation-trace", "--no-progress", "--no-host-profiler",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "samples         1 of 1" in captured.out and "error" not in captured.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 1 and summary["finished"] and not summary.get("failure")


@pytest.mark.parametrize("given", ["none", "empty", "with a file"])
def test_a_run_refused_as_it_is_built_leaves_nothing_behind_and_its_out_can_be_used_again(tmp_path, capsys, given):
    # before, the refused run's config.json, lock and logs stayed: the same --out then said it held a run
    out = tmp_path / "out"
    if given != "none":
        out.mkdir()
    if given == "with a file":
        (out / "notes.txt").write_text("mine")
    flags = ["run", "--task", "knapsack", "--method", "gp", "--budget", "20", "--no-robust", "--out", str(out),
             "--no-progress", "--record", str(tmp_path / "calls.jsonl")]
    for _ in range(2):  # the second refusal is the same one, not "already holds a run"
        assert main(flags) == 2
        assert "gp evolves functions that return one score per candidate" in capsys.readouterr().err
        left = sorted(p.name for p in out.iterdir()) if out.exists() else None
        assert left == {"none": None, "empty": [], "with a file": ["notes.txt"]}[given]
        held = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                if os.path.exists(f"/proc/self/fd/{fd}")]
        # nor held open: the run directory's records and lock, the LLM journals, the host's log, the recording
        assert not [p for p in held if p.startswith(str(tmp_path))]


def test_resuming_a_file_says_it_is_a_file(tmp_path, capsys):
    # it said "no such directory" of a path that exists (a run's summary.json given for its folder)
    given = tmp_path / "summary.json"
    given.write_text("{}")
    assert main(["resume", str(given), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == f"raise-ahd: error: {given} is not a run directory (a file)"


def test_a_run_and_a_compare_never_write_into_each_other_s_folder(tmp_path, capsys):
    """Each went ahead (exit 0) and replaced the other's report.html."""
    compare_dir, run_dir = tmp_path / "cmp", tmp_path / "run"
    compare_dir.mkdir()
    (compare_dir / "compare.json").write_text("{}")
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")
    tiny = ["--task", "ovrp", "--budget", "4", "--pop-size", "4", "--tau", "1", "--workers", "1", "--no-progress"]
    assert main(["run", *tiny, "--out", str(compare_dir)]) == 2
    assert capsys.readouterr().err == (f"raise-ahd: error: {compare_dir} holds a compare; a run writes a folder of its "
                                       "own: choose another --out\n")
    assert main(["compare", *tiny, "--seeds", "1", "--jobs", "1", "--out", str(run_dir)]) == 2
    assert capsys.readouterr().err.endswith(f"raise-ahd: error: {run_dir} holds a run; a compare writes a folder of "
                                            "its own: choose another --out\n")
    assert sorted(os.listdir(compare_dir)) == ["compare.json"] and sorted(os.listdir(run_dir)) == ["config.json"]


def test_a_run_whose_programs_failed_on_an_adversarial_instance_is_not_said_to_have_evaluated_none(tmp_path):
    # six programs scored, then every one failed on an instance a refresh added (the task's metric was inf
    # there): the run said "none of its 8 programs evaluated; 2 failed with: ..."
    rows = [{"sample": k, "error": None} for k in range(6)] + [{"sample": k, "error": "boom"} for k in (6, 7)]
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "scores.jsonl").write_text(json.dumps({"program_id": "a", "failed_on": ["adv-3-x"]}) + "\n")
    assert nothing_evaluated({"samples": 8}, tmp_path) == (
        "none of its 8 programs is valid on its instance set: 6 evaluated, then failed on the adversarial instance "
        "adv-3-x; 2 failed with: boom (its limits: docs/engine.md)")
    (tmp_path / "scores.jsonl").unlink()  # none re-scored: the programs that failed are all there is to say
    assert nothing_evaluated({"samples": 8}, tmp_path) == (
        "none of its 8 programs evaluated; 2 failed with: boom (its limits: docs/engine.md)")
