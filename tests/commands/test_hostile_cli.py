"""Hostile input on every subcommand: a non-zero exit, exactly one line on stderr, no traceback.

The CLI runs in this process (``raise_plugin.cli.main``), so the whole table takes seconds;
an alarm turns a case that starts real work instead of refusing into a failure, not a hang.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from raise_plugin.cli import main

GOOD = "import numpy as np\n\ndef priority(item, bins):\n    return -bins\n"


@pytest.fixture()
def files(tmp_path):
    """A workspace: a good heuristic, a plain file, a directory, TOML configs, replay files."""
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "plain.txt").write_text("just a file\n")
    (tmp_path / "one_argument.py").write_text("def priority(item):\n    return item\n")
    (tmp_path / "folder").mkdir()
    # nested past what Python's parser holds: a RecursionError and a MemoryError traceback each
    (tmp_path / "deep_sum.py").write_text(GOOD + "\n_x = " + "+".join(["1"] * 200_000) + "\n")
    (tmp_path / "deep_minus.py").write_text(GOOD + "\n_y = " + "-" * 200_000 + "1\n")
    (tmp_path / "syntax.toml").write_text("task = 'obp\nbudget = \n")
    (tmp_path / "unknown.toml").write_text("task = 'obp'\ncolour = 'blue'\n")
    (tmp_path / "types.toml").write_text("task = 'obp'\ntau = 'often'\n")
    (tmp_path / "range.toml").write_text("[run]\ntask = 'obp'\nepsilon = -1.0\n")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00\x01task")
    (tmp_path / "truncated.jsonl").write_text('{"prompt": "a", "resp')
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "damaged-run").mkdir()
    (tmp_path / "damaged-run" / "samples.jsonl").write_bytes(b'{"score": 1.0, "program": "x\xff\n[1]\n')
    (tmp_path / "damaged-log" / "samples").mkdir(parents=True)
    (tmp_path / "damaged-log" / "samples" / "samples_1~200.json").write_text('[{"function": "def pri')
    return tmp_path


RUN = ["run", "--budget", "4", "--pop-size", "2", "--nominal", "1", "--no-progress", "--no-host-profiler"]

CASES = {
    # run
    "run: unknown task": RUN + ["--task", "nope", "--out", "{tmp}/r"],
    "run: unknown method": RUN + ["--method", "gpt-evolve", "--out", "{tmp}/r"],
    "run: eps negative": RUN + ["--epsilon", "-0.1", "--out", "{tmp}/r"],
    "run: eps zero": RUN + ["--epsilon", "0", "--out", "{tmp}/r"],
    "run: eps nan": RUN + ["--epsilon", "nan", "--out", "{tmp}/r"],
    "run: llm timeout past a day": RUN + ["--llm-timeout", "1e10", "--out", "{tmp}/r"],  # an OverflowError per request
    "run: unknown objective": RUN + ["--adversary-objective", "regret:nope", "--out", "{tmp}/r"],
    "run: population K zero": RUN + ["--adversary-objective", "regret:population:0", "--out", "{tmp}/r"],
    "run: balanced weight above one": RUN + ["--aggregation", "balanced:2", "--out", "{tmp}/r"],
    "run: draws zero": RUN + ["--inner-draws", "0", "--out", "{tmp}/r"],
    "run: unknown tau unit": RUN + ["--tau-unit", "weeks", "--out", "{tmp}/r"],
    "run: negative cost cap": RUN + ["--max-cost-usd", "-1", "--out", "{tmp}/r"],
    "run: zero call cap": RUN + ["--max-llm-calls", "0", "--out", "{tmp}/r"],
    "run: malformed price": RUN + ["--price", "model=1", "--out", "{tmp}/r"],
    # these three were taken (a plain run, so nothing else refuses them): "" priced every model, and a cost
    # past a float's range was written to the journal as Infinity
    "run: price naming no model": RUN + ["--no-robust", "--task", "ovrp", "--price", "=1,2", "--out", "{tmp}/r"],
    "run: price past any model's": RUN + ["--no-robust", "--task", "ovrp", "--price", "m=1e308,1", "--out", "{tmp}/r"],
    "run: price not finite": RUN + ["--no-robust", "--task", "ovrp", "--price", "m=inf,1", "--out", "{tmp}/r"],
    "run: eps not a number": RUN + ["--epsilon", "small", "--out", "{tmp}/r"],
    "run: eps beyond reach": RUN + ["--epsilon", "5", "--out", "{tmp}/r"],
    "run: tau zero": RUN + ["--tau", "0", "--out", "{tmp}/r"],
    "run: jit after negative": RUN + ["--jit", "--jit-after", "-0.5", "--out", "{tmp}/r"],
    "run: budget zero": ["run", "--budget", "0", "--out", "{tmp}/r", "--no-progress"],
    "run: budget negative": ["run", "--budget", "-3", "--out", "{tmp}/r", "--no-progress"],
    "run: pop-size one": RUN + ["--pop-size", "1", "--out", "{tmp}/r"],
    "run: pop-size not an int": RUN + ["--pop-size", "ten", "--out", "{tmp}/r"],
    "run: inner population zero": RUN + ["--inner-population", "0", "--out", "{tmp}/r"],
    "run: timeout negative": RUN + ["--timeout", "-1", "--out", "{tmp}/r"],
    "run: unknown aggregation": RUN + ["--aggregation", "median", "--out", "{tmp}/r"],
    "run: config missing": RUN + ["--config", "{tmp}/missing.toml", "--out", "{tmp}/r"],
    "run: config is a directory": RUN + ["--config", "{tmp}/folder", "--out", "{tmp}/r"],
    "run: config syntax": RUN + ["--config", "{tmp}/syntax.toml", "--out", "{tmp}/r"],
    "run: config unknown key": RUN + ["--config", "{tmp}/unknown.toml", "--out", "{tmp}/r"],
    "run: config bad type": RUN + ["--config", "{tmp}/types.toml", "--out", "{tmp}/r"],
    "run: config out of range": RUN + ["--config", "{tmp}/range.toml", "--out", "{tmp}/r"],
    "run: config not text": RUN + ["--config", "{tmp}/binary.toml", "--out", "{tmp}/r"],
    "run: out is a file": RUN + ["--out", "{tmp}/plain.txt"],
    "run: out under a file": RUN + ["--out", "{tmp}/plain.txt/run"],
    "run: bad llm": RUN + ["--llm", "claude-please", "--out", "{tmp}/r"],
    "run: openai without a key": RUN + ["--llm", "openai:gpt-x", "--out", "{tmp}/r"],
    "run: replay of a missing file": RUN + ["--llm", "replay:{tmp}/missing.jsonl", "--out", "{tmp}/r"],
    "run: replay of a truncated file": RUN + ["--llm", "replay:{tmp}/truncated.jsonl", "--out", "{tmp}/r"],
    "run: replay without a file": RUN + ["--llm", "replay:", "--out", "{tmp}/r"],
    "run: bad executor": RUN + ["--executor", "threads:9", "--out", "{tmp}/r"],
    "run: bad executor count": RUN + ["--executor", "process:x", "--out", "{tmp}/r"],
    "run: unknown flag": RUN + ["--colour", "blue"],
    # resume
    "resume: missing directory": ["resume", "{tmp}/nothing-here"],
    "resume: a file": ["resume", "{tmp}/plain.txt"],
    "resume: not a run directory": ["resume", "{tmp}/folder"],
    "resume: budget not an int": ["resume", "{tmp}/folder", "--budget", "lots"],
    "resume: no directory given": ["resume"],
    # compare
    "compare: unknown task": ["compare", "--task", "nope", "--out", "{tmp}/c"],
    "compare: unknown preset": ["compare", "--preset", "nope", "--out", "{tmp}/c"],
    "compare: unknown projection": ["compare", "--projection", "cube", "--out", "{tmp}/c"],
    "compare: unknown objective": ["compare", "--adversary-objective", "regret", "--out", "{tmp}/c"],
    "compare: unknown method": ["compare", "--methods", "eoh,nope", "--out", "{tmp}/c"],
    "compare: eps not numbers": ["compare", "--epsilons", "a,b", "--out", "{tmp}/c"],
    "compare: eps negative": ["compare", "--epsilons", "-0.1", "--out", "{tmp}/c"],
    "compare: budget zero": ["compare", "--budget", "0", "--out", "{tmp}/c"],
    "compare: seeds zero": ["compare", "--seeds", "0", "--out", "{tmp}/c"],
    "compare: pop-size one": ["compare", "--pop-size", "1", "--out", "{tmp}/c"],
    "compare: tau zero": ["compare", "--tau", "0", "--out", "{tmp}/c"],
    "compare: out is a file": ["compare", "--budget", "4", "--pop-size", "2", "--seeds", "1", "--out",
                               "{tmp}/plain.txt"],
    "compare: bad llm": ["compare", "--llm", "nope", "--out", "{tmp}/c"],
    "compare: replay of a missing file": ["compare", "--llm", "replay:{tmp}/missing.jsonl", "--out", "{tmp}/c"],
    "compare: bad executor": ["compare", "--executor", "ray://x", "--out", "{tmp}/c"],
    "compare: workers zero": ["compare", "--workers", "0", "--out", "{tmp}/c"],
    # demo
    "demo: out is a file": ["demo", "--out", "{tmp}/plain.txt"],
    "demo: bad executor": ["demo", "--executor", "nope", "--out", "{tmp}/d"],
    "demo: seeds zero": ["demo", "--seeds", "0", "--out", "{tmp}/d"],
    # evaluate
    "evaluate: unknown task": ["evaluate", "{tmp}/good.py", "--task", "nope"],
    "evaluate: missing file": ["evaluate", "{tmp}/missing.py", "--task", "obp"],
    "evaluate: a directory": ["evaluate", "{tmp}/folder", "--task", "obp"],
    "evaluate: not python": ["evaluate", "{tmp}/plain.txt", "--task", "obp"],
    "evaluate: binary file": ["evaluate", "{tmp}/binary.toml", "--task", "obp"],
    "evaluate: nested too deeply": ["evaluate", "{tmp}/deep_sum.py", "--task", "obp"],
    "evaluate: negated too deeply": ["evaluate", "{tmp}/deep_minus.py", "--task", "obp"],
    "evaluate: timeout zero": ["evaluate", "{tmp}/good.py", "--task", "obp", "--timeout", "0"],
    "evaluate: timeout negative": ["evaluate", "{tmp}/good.py", "--task", "obp", "--timeout", "-5"],
    "evaluate: workers zero": ["evaluate", "{tmp}/good.py", "--task", "obp", "--workers", "0"],
    "evaluate: unknown suite": ["evaluate", "{tmp}/good.py", "--task", "obp", "--suite", "huge"],
    "evaluate: out is a directory": ["evaluate", "{tmp}/good.py", "--task", "obp", "--out", "{tmp}/folder"],
    "evaluate: out under a file": ["evaluate", "{tmp}/good.py", "--task", "obp", "--out", "{tmp}/plain.txt/r.csv"],
    "evaluate: bad executor": ["evaluate", "{tmp}/good.py", "--task", "obp", "--executor", "nope"],
    "evaluate: jit after not a number": ["evaluate", "{tmp}/good.py", "--task", "obp", "--jit", "--jit-after", "soon"],
    "evaluate: no task": ["evaluate", "{tmp}/good.py"],
    # profile
    "profile: unknown task": ["profile", "{tmp}/good.py", "--task", "nope"],
    "profile: missing file": ["profile", "{tmp}/missing.py", "--task", "obp"],
    "profile: binary file": ["profile", "{tmp}/binary.toml", "--task", "obp"],
    "profile: eps not numbers": ["profile", "{tmp}/good.py", "--task", "obp", "--epsilons", "x"],
    "profile: eps negative": ["profile", "{tmp}/good.py", "--task", "obp", "--epsilons", "-0.1"],
    "profile: eps beyond reach": ["profile", "{tmp}/good.py", "--task", "obp", "--epsilons", "0.001,5"],
    "profile: wrong arguments": ["profile", "{tmp}/one_argument.py", "--task", "obp"],
    "evaluate: wrong arguments": ["evaluate", "{tmp}/one_argument.py", "--task", "obp"],
    "profile: seeds zero": ["profile", "{tmp}/good.py", "--task", "obp", "--adversary-seeds", "0"],
    "profile: seeds past the bound": ["profile", "{tmp}/good.py", "--task", "obp", "--adversary-seeds", "100000000000"],
    "profile: population one": ["profile", "{tmp}/good.py", "--task", "obp", "--inner-population", "1"],
    "profile: unknown baseline": ["profile", "--task", "obp", "--compare", "worstfit"],
    "profile: nothing to profile": ["profile", "--task", "obp"],
    "profile: workers zero": ["profile", "{tmp}/good.py", "--task", "obp", "--workers", "0"],
    "profile: timeout zero": ["profile", "{tmp}/good.py", "--task", "obp", "--timeout", "0"],
    # past poll's range (about 2.1e6 s) each of these four was an OverflowError traceback
    "profile: timeout past a week": ["profile", "{tmp}/good.py", "--task", "obp", "--timeout", "1e10"],
    "evaluate: timeout past a week": ["evaluate", "{tmp}/good.py", "--task", "obp", "--suite", "nominal",
                                      "--baselines", "none", "--workers", "1", "--no-progress", "--timeout", "3e6"],
    "rerank: timeout past a week": ["rerank", "{tmp}/folder", "--task", "obp", "--timeout", "1e10"],
    "run: timeout past a week": RUN + ["--timeout", "604801", "--out", "{tmp}/r"],
    "profile: out is a file": ["profile", "{tmp}/good.py", "--task", "obp", "--out", "{tmp}/plain.txt"],
    "profile: unknown projection": ["profile", "{tmp}/good.py", "--task", "obp", "--projection", "cube"],
    # rerank
    "rerank: missing log": ["rerank", "{tmp}/nothing-here", "--task", "obp"],
    "rerank: not a log": ["rerank", "{tmp}/folder", "--task", "obp"],
    "rerank: a file": ["rerank", "{tmp}/plain.txt", "--task", "obp"],
    "rerank: damaged log": ["rerank", "{tmp}/damaged-log", "--task", "obp"],
    "rerank: damaged run directory": ["rerank", "{tmp}/damaged-run", "--task", "obp"],
    "rerank: unknown task": ["rerank", "{tmp}/folder", "--task", "nope"],
    "rerank: epsilon zero": ["rerank", "{tmp}/folder", "--task", "obp", "--epsilon", "0"],
    "rerank: top one": ["rerank", "{tmp}/folder", "--task", "obp", "--top", "1"],
    "rerank: refreshes zero": ["rerank", "{tmp}/folder", "--task", "obp", "--refreshes", "0"],
    "rerank: unknown aggregation": ["rerank", "{tmp}/folder", "--task", "obp", "--aggregation", "median"],
    "rerank: workers zero": ["rerank", "{tmp}/folder", "--task", "obp", "--workers", "0"],
    "rerank: out is a file": ["rerank", "{tmp}/folder", "--task", "obp", "--out", "{tmp}/plain.txt"],
    # select
    "select: missing directory": ["select", "{tmp}/nothing-here"],
    "select: a file": ["select", "{tmp}/plain.txt"],
    "select: not a run directory": ["select", "{tmp}/folder"],
    "select: no directory given": ["select"],
    "compare: select on the test suite": ["compare", "--select-on", "test", "--out", "{tmp}/c"],
    "compare: select on nothing known": ["compare", "--select-on", "vibes", "--out", "{tmp}/c"],
    # tasks, and no command at all
    "tasks: unexpected argument": ["tasks", "obp"],
    "no command": [],
    "unknown command": ["train"],
}


class _Alarm(Exception):
    pass


@pytest.fixture()
def alarm():
    def ring(*_):
        raise _Alarm("the command started real work instead of refusing")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_non_zero_with_one_line_and_no_traceback(case, files, alarm, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(files)
    argv = [a.replace("{tmp}", str(files)) for a in CASES[case]]
    code, err = run_cli(argv, capsys)
    lines = err.strip().splitlines()
    assert code != 0, (case, err)
    assert "Traceback" not in err, err
    assert len(lines) == 1, (case, lines)
    assert lines[0].startswith("raise-ahd"), lines[0]


def test_eps_beyond_reach_names_the_largest_reachable_distance(files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    code, err = run_cli(RUN + ["--epsilon", "5", "--out", str(files / "r")], capsys)
    assert code == 2 and "largest distance obp's distributions can reach" in err and "(0.02)" in err


def test_eps_just_beyond_reach_is_told_in_digits_that_tell_the_two_apart(files, capsys, monkeypatch):
    # 0.02000001 said "0.02 is beyond the largest distance ... (0.02)"
    monkeypatch.chdir(files)
    code, err = run_cli(RUN + ["--epsilon", "0.02000001", "--out", str(files / "r")], capsys)
    assert code == 2 and "'epsilon': 0.02000001 is beyond the largest distance" in err and "(0.02)" in err, err


def test_a_word_a_command_does_not_take_points_at_that_command_s_help(capsys):
    assert main(["tasks", "obp"]) == 2  # `tasks --task obp` describes one task
    assert capsys.readouterr().err == "raise-ahd: error: unrecognized arguments: obp (see raise-ahd tasks --help)\n"
    assert main(["nosuch"]) == 2
    assert capsys.readouterr().err.endswith("(see raise-ahd --help)\n")


def test_a_command_that_succeeds_prints_nothing_on_stderr(files, capsys):
    code, err = run_cli(["evaluate", str(files / "good.py"), "--task", "obp", "--suite",
                         "nominal", "--baselines", "none", "--workers", "1", "--no-progress"], capsys)
    # a note on what the sandbox cannot hold on this machine (said once per process) is no complaint
    assert code == 0 and [line for line in err.splitlines() if not line.startswith("raise-ahd: note: ")] == []


def test_a_reader_that_goes_away_ends_a_command_quietly_as_a_broken_pipe():
    """`raise-ahd tasks | head -1` printed `raise-ahd: error: Broken pipe` and exited 1, as if the command
    had failed; it now ends as a command killed by SIGPIPE would, saying nothing."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", "import sys; from raise_plugin.cli import main; "
                                "sys.exit(main(['tasks']))"], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # gone before the command writes its first line (its imports take far longer)
    err = process.stderr.read().decode()
    assert (process.wait(timeout=120), err) == (128 + signal.SIGPIPE, "")


def test_a_broken_pipe_of_a_commands_own_is_still_said(monkeypatch, capsys):
    """Only a reader gone from standard output ends quietly: a pipe the command itself wrote to is a failure."""
    import raise_plugin.commands.tasks as tasks_command

    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(tasks_command, "run", broken)  # what the parser runs for `tasks`, read as it is built
    assert main(["tasks"]) == 1
    assert capsys.readouterr().err == "raise-ahd: error: Broken pipe\n"
