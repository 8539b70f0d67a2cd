"""A run replayed from its run directory alone: the recorded settings are the defaults, flags
given override them, the same samples come out, and the lines a replay prints say that answers
were replayed, not requests sent."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from raise_plugin.cli import main
from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.errors import UserError
from raise_plugin.llm import ReplayLLM, ReplayMissError, make_llm
from raise_plugin.llm.errors import LLMCapReached
from raise_plugin.replay import RecordedRun, replaying
from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import start_run

# nothing here is a default: a replay that did not take them from the recording would differ
FLAGS = ["--task", "ovrp", "--tau", "1", "--inner-population", "4", "--inner-generations", "2", "--budget", "12",
         "--pop-size", "4", "--nominal", "1", "--seed", "2", "--max-llm-calls", "12", "--no-validation-trace",
         "--no-host-profiler", "--no-progress"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("recorded") / "run"
    assert main(["run", *FLAGS, "--out", str(out)]) == 0
    return out


def samples(run: Path) -> list[tuple]:
    return [(s["sample"], s["program"], s["score"]) for s in read_jsonl(run / "samples.jsonl")]


def test_a_run_replayed_from_its_directory_alone_gives_the_same_samples(recorded, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "again"
    assert main(["run", "--llm", f"replay:{recorded}", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(samples(recorded)) == 12 and samples(out) == samples(recorded)
    assert read_jsonl(out / "population.jsonl") == read_jsonl(recorded / "population.jsonl")
    a, b = (json.loads((run / "summary.json").read_text()) for run in (recorded, out))
    assert a["best"] == b["best"] and a["instance_set"] == b["instance_set"]
    assert printed[0] == (f"replaying {recorded}: its settings (task ovrp, method eoh, robust, tau 1, inner population "
                          f"4, inner generations 2, budget 12, pop size 4, seed 2, nominal 1, host profiler off, max "
                          f"llm calls 12, validation trace off) and its 12 recorded answers")
    config = json.loads((out / "config.json").read_text())
    assert config["llm"] == f"replay:{recorded.resolve()}" and config["out"] == str(out)
    assert config["record"] is None and config["base_url"] is None
    assert {k: v for k, v in config.items() if k not in ("llm", "out")} == {
        k: v for k, v in json.loads((recorded / "config.json").read_text()).items() if k not in ("llm", "out")}


def test_a_replay_s_stop_and_usage_lines_say_answers_were_replayed_not_sent(recorded, tmp_path, capsys):
    capsys.readouterr()
    # a budget past the 12 recorded answers: the replay stops at them (at the recorded budget it has finished)
    assert main(["run", "--llm", f"replay:{recorded}", "--budget", "16", "--out", str(tmp_path / "again"),
                 "--no-progress"]) == 0
    lines = {line[:16].strip(): line[16:] for line in capsys.readouterr().out.splitlines()}
    assert lines["llm usage"] == (f"replay ({recorded / 'llm_calls.jsonl'}): 12 answers replayed, no request sent; "
                                  "as recorded: retries 0, failures 0, unusable 0, input tokens 0, output tokens 0, "
                                  "cost usd 0.0 (not spent again)")
    assert lines["stopped early"].startswith("the cap of 12 LLM requests is reached (12 answers replayed, no "
                                             "request sent)")
    assert lines["stopped early"].endswith(f"`raise-ahd resume {tmp_path / 'again'} --max-llm-calls HIGHER`")
    assert "sent," not in lines["stopped early"]
    assert lines["llm"] == f"replay of the run {recorded} (12 recorded answers, by one sampler; no LLM is called)"


def test_a_flag_given_overrides_the_recorded_setting(recorded, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "shorter"
    assert main(["run", "--llm", f"replay:{recorded}", "--budget", "8", "--out", str(out), "--no-progress"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("and its 12 recorded answers; given here: budget 8 (recorded 12)")
    assert "budget 12" not in first
    assert json.loads((out / "config.json").read_text())["budget"] == 8
    assert samples(out) == samples(recorded)[:8]


def test_python_replays_a_run_directory_with_replaying(recorded, tmp_path):
    config = replaying(recorded, out=str(tmp_path / "py"))
    assert (config.task, config.budget.samples, config.budget.pop_size, config.adversary.nominal, config.seed) == (
        "ovrp", 12, 4, 1, 2)
    assert config.llm.backend == f"replay:{recorded.resolve()}"
    assert start_run(config).run()["samples"] == 12
    assert samples(tmp_path / "py") == samples(recorded)
    assert replaying(recorded, budget=6, seed=None).budget.samples == 6  # None leaves the recorded value
    run = RecordedRun.read(recorded)
    line = run.line(run.config(pop_size=3))
    assert line.endswith("given here: pop size 3 (recorded 4)")
    with pytest.raises(ConfigError, match="its llm is the replay of its answers"):
        replaying(recorded, llm="offline")


def test_recording_a_replay_into_the_journal_it_reads_is_refused_and_the_journal_stays(recorded, tmp_path, capsys):
    # it appended every replayed answer to the journal it read, doubling it
    journal = recorded / "llm_calls.jsonl"
    before = journal.read_bytes()
    capsys.readouterr()
    assert main(["run", "--llm", f"replay:{recorded}", "--record", str(recorded / ".." / recorded.name / journal.name),
                 "--out", str(tmp_path / "again"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the recording this replay reads: record to another file" in err
    assert journal.read_bytes() == before and not (tmp_path / "again").exists()
    with pytest.raises(UserError, match="is the recording this replay reads"):
        make_llm(f"replay:{journal}", record=journal)
    assert journal.read_bytes() == before


def test_replay_of_a_missing_or_non_run_directory_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    cases = {"missing": "no such recording (a --record file) or run directory",
             "folder": "not a run directory (no config.json)",
             "half": "the run directory holds no journal of LLM answers (llm_calls.jsonl)"}
    for name, why in cases.items():
        capsys.readouterr()
        assert main(["run", "--llm", f"replay:{tmp_path / name}", "--out", str(tmp_path / f"out-{name}")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("raise-ahd: error: ") and why in err, err
        assert not (tmp_path / f"out-{name}").exists()
    with pytest.raises(ConfigError, match="not a run directory"):
        replaying(tmp_path / "folder")


def test_replay_of_a_run_whose_config_lacks_a_setting_is_refused_in_one_line(recorded, tmp_path, capsys):
    """Filled by its default, a setting the config.json lost would replay another run (another task's
    prompts against this run's answers)."""
    import shutil

    source = tmp_path / "source"
    shutil.copytree(recorded, source)
    config = json.loads((source / "config.json").read_text())
    del config["task"]
    (source / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert main(["run", "--llm", f"replay:{source}", "--out", str(tmp_path / "again"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.json lacks 'task', which every run records" in err, err
    assert not (tmp_path / "again").exists()


def test_a_recorded_file_replay_that_misses_says_how_to_replay_the_run(recorded, tmp_path):
    replay = make_llm(f"replay:{recorded / 'llm_calls.jsonl'}")  # a run's journal: its run directory is named
    with pytest.raises(ReplayMissError, match=r"not in the recording: this run asks prompts the recorded one did "
                                              r"not \(were the recorded run's settings given again\? --llm "
                                              rf"replay:{re.escape(str(recorded))} takes them from its run directory"):
        replay.draw_sample("a prompt no run asked")
    copy = tmp_path / "calls.jsonl"  # a --record file: the run directory is said, not named
    copy.write_bytes((recorded / "llm_calls.jsonl").read_bytes())
    with pytest.raises(ReplayMissError, match=r"given again\? --llm replay: with the recorded run's directory takes "
                                              r"them from it\)$"):
        make_llm(f"replay:{copy}").draw_sample("a prompt no run asked")
    assert isinstance(make_llm(f"replay:{recorded}"), ReplayLLM)


@pytest.mark.parametrize("journal", [True, False])
def test_a_replay_miss_names_the_recorded_run_not_the_replay_s_own_directory(recorded, tmp_path, capsys, journal):
    # the stop line's RUN_DIR, in a hint that means the recorded run, was replaced by the new run's --out
    source = recorded / "llm_calls.jsonl"
    if not journal:
        source = tmp_path / "calls.jsonl"
        source.write_bytes((recorded / "llm_calls.jsonl").read_bytes())
    out = tmp_path / "again"
    capsys.readouterr()
    assert main(["run", *FLAGS, "--seed", "5", "--llm", f"replay:{source}", "--out", str(out)]) == 3
    printed = capsys.readouterr()
    stopped = {line[:16].strip(): line[16:] for line in printed.out.splitlines()}["stopped early"]
    hint = (f"--llm replay:{recorded} takes them from its run directory)" if journal else
            "--llm replay: with the recorded run's directory takes them from it)")
    assert stopped.endswith(hint) and printed.err.strip().endswith(hint)
    assert f"replay:{out}" not in printed.out + printed.err and "RUN_DIR" not in printed.out + printed.err


def test_a_replay_s_cost_and_failure_bounds_say_nothing_was_spent(recorded):
    replay = ReplayLLM(recorded)
    ledger = replay.usage
    ledger.record("i1", input_tokens=1000, output_tokens=500, cost_usd=0.75, retries=1)
    ledger.max_cost_usd = 0.5
    with pytest.raises(LLMCapReached, match=r"cost cap of \$0.5 is reached \(\$0.7500 recorded in 1 answers "
                                            r"replayed, nothing spent\)"):
        ledger.check()
    ledger.max_cost_usd, ledger.max_requests = None, 2
    with pytest.raises(LLMCapReached, match=r"\(1 answers replayed with their 1 recorded retries, no request sent\)"):
        ledger.check()
    assert "1 answers replayed, no request sent; as recorded: 0 failed, 1 retries" in ledger.summary()


def test_a_run_stopped_before_its_budget_replays_to_where_it_stopped_and_ends_cleanly(tmp_path, capsys):
    """A recorded run stopped early (a signal, a callback) asked no more prompts: its replay gives
    the same samples, then, asking beyond the recording, stops cleanly where it stopped (exit 0,
    resumable), not as a replay that asks prompts the recording does not hold."""
    from raise_plugin.robust.hooks import Callback

    class StopAfter(Callback):
        def on_sample_evaluated(self, method, snapshot, sample) -> None:
            if snapshot.samples >= 7:
                method.request_stop("stopped by the test")

    stopped = tmp_path / "stopped"
    config = RunConfig(task="ovrp", robust=False, budget=40, pop_size=4, nominal=1, seed=1, out=str(stopped),
                       validation_trace=False, host_profiler=False)
    summary = start_run(config, callbacks=[StopAfter()]).run()
    assert not summary["finished"] and 7 <= len(samples(stopped)) < 40
    capsys.readouterr()
    again = tmp_path / "again"
    assert main(["run", "--llm", f"replay:{stopped}", "--out", str(again), "--no-progress"]) == 0
    printed = capsys.readouterr()
    lines = {line[:16].strip(): line[16:] for line in printed.out.splitlines()}
    assert lines["stopped early"].startswith(f"replay {stopped / 'llm_calls.jsonl'}: all ")
    assert "the recorded run asked no more (it stopped there)" in lines["stopped early"]
    assert "error" not in printed.err
    assert samples(again) == samples(stopped)


def test_recording_into_a_run_directory_s_journal_is_refused_before_anything_is_written(recorded, tmp_path, capsys):
    # the run's own journal got every answer twice, another run's journal grew by a run that is not its own:
    # neither replayed again
    journal = recorded / "llm_calls.jsonl"
    before = journal.read_bytes()
    out = tmp_path / "run"
    cases = {str(out / "llm_calls.jsonl"): "is the run's own journal of answers",
             str(journal): f"is the journal of answers of the run in {recorded}: record to another file"}
    for record, why in cases.items():
        capsys.readouterr()
        assert main(["run", "--task", "ovrp", "--budget", "4", "--pop-size", "2", "--tau", "1", "--record", record,
                     "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("raise-ahd: error: config field 'record': ") and why in err
        assert not out.exists() and journal.read_bytes() == before


def test_recording_to_a_device_or_a_pipe_is_refused_before_anything_is_written(tmp_path, capsys):
    # /dev/null was taken, then every write (and every resume, which keeps the recording) failed
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for record in ("/dev/null", str(pipe)):
        capsys.readouterr()
        assert main(["run", "--task", "ovrp", "--budget", "4", "--pop-size", "2", "--tau", "1", "--record", record,
                     "--out", str(tmp_path / "run"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err == f"raise-ahd: error: config field 'record': {record}: not a regular file; give the JSONL file " \
                      "to record to\n"
        assert not (tmp_path / "run").exists()


def test_a_recording_that_holds_no_answer_is_refused_before_anything_is_written(recorded, tmp_path, capsys):
    # the run started, asked a prompt "not in the recording", failed and left its directory
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "torn.jsonl").write_text('{"hash": "ab", "resp')  # only a line a kill cut short
    run = tmp_path / "unanswered"
    run.mkdir()
    (run / "config.json").write_bytes((recorded / "config.json").read_bytes())
    (run / "llm_calls.jsonl").write_text("\n")
    for source in (tmp_path / "empty.jsonl", tmp_path / "torn.jsonl", "/dev/null", run):
        capsys.readouterr()
        assert main(["run", "--llm", f"replay:{source}", "--task", "ovrp", "--budget", "4", "--pop-size", "2",
                     "--tau", "1", "--out", str(tmp_path / "out"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"replay:{source}: the recording holds no answer" in err, err
        assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="the recording holds no answer"):
        replaying(run)


def test_a_run_replayed_from_its_directory_reads_its_journal_once(recorded, tmp_path, capsys, monkeypatch):
    from raise_plugin.llm import recording

    reads = []
    read = recording._answers
    monkeypatch.setattr(recording, "_answers", lambda *a: reads.append(a[0]) or read(*a))
    recording._last.clear()  # as in a process that has read no recording yet
    assert main(["run", "--llm", f"replay:{recorded}", "--out", str(tmp_path / "again"), "--no-progress"]) == 0
    assert samples(tmp_path / "again") == samples(recorded)
    assert reads == [recorded / "llm_calls.jsonl"]  # the run's checks, the line it prints and the back-end: one read


def test_a_recording_changed_since_it_was_read_is_read_again(recorded, tmp_path):
    from raise_plugin.llm.recording import read_recording

    copy = tmp_path / "answers.jsonl"
    lines = (recorded / "llm_calls.jsonl").read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:5]))
    first = read_recording(copy)
    assert read_recording(copy) is first and len(first.answers) == 5 and first.run is None
    with open(copy, "a") as more:
        more.write("".join(lines[5:]))
    again = read_recording(copy)
    assert len(again.answers) == 12 and [a["hash"] for a in again.answers] == [
        json.loads(line)["hash"] for line in lines]
    assert read_recording(recorded).run == recorded and read_recording(recorded / "llm_calls.jsonl").run == recorded
    with pytest.raises(TypeError):
        again.answers[0]["response"] = "changed"  # the answers every reader shares cannot be changed by one
