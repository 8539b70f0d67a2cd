"""``raise-ahd tasks`` and ``raise-ahd evaluate``: tables, CSV, and one-line errors."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from raise_plugin.cli import main
from robust_helpers import SMALL_OBP

GOOD = "import numpy as np\n\ndef priority(item, bins):\n    return -bins\n"


def run_cli(*args):
    proc = subprocess.run([sys.executable, "-m", "raise_plugin.cli", *args], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def test_tasks_lists_obp(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert "obp" in out
    # each task says what its runs hand on: the robust best everywhere (no validation suite chose otherwise)
    assert out.count("final program: the run's robust best") == out.count("robust defaults:") >= 3


def test_evaluate_file_and_baselines_on_nominal(tmp_path, capsys):
    f = tmp_path / "mine.py"
    f.write_text(GOOD)
    out = tmp_path / "r.csv"
    assert main(["evaluate", str(f), "--task", "obp", "--suite", "nominal", "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "mine" in text and "BestFit" in text and "FirstFit" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 15 and {r["heuristic"] for r in rows} == {"mine", "BestFit", "FirstFit"}
    mine = [float(r["metric"]) for r in rows if r["heuristic"] == "mine"]
    best = [float(r["metric"]) for r in rows if r["heuristic"] == "BestFit"]
    assert mine == best  # the file is BestFit


FIRST = "import numpy as np\n\ndef priority(item, bins):\n    return np.arange(len(bins), 0, -1.0)\n"


def test_files_of_one_name_are_named_apart_by_their_paths_each_scoring_as_it_does_alone(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "good.py").write_text(GOOD)  # best fit
    (tmp_path / "b" / "good.py").write_text(FIRST)  # first fit
    (tmp_path / "b" / "BestFit.py").write_text(FIRST)  # named as a baseline evaluated beside it
    files = [str(tmp_path / "a" / "good.py"), str(tmp_path / "b" / "good.py"), str(tmp_path / "b" / "BestFit.py")]
    out = tmp_path / "r.csv"
    assert main(["evaluate", *files, "--task", "obp", "--suite", "nominal", "--out", str(out), "--workers", "1",
                 "--no-progress"]) == 0
    rows = list(csv.DictReader(out.open()))
    metrics = {h: [float(r["metric"]) for r in rows if r["heuristic"] == h] for h in {r["heuristic"] for r in rows}}
    assert set(metrics) == {*files, "BestFit", "FirstFit"} and all(len(m) == 5 for m in metrics.values())
    assert metrics[files[0]] == metrics["BestFit"] and metrics[files[1]] == metrics[files[2]] == metrics["FirstFit"]
    assert metrics["BestFit"] != metrics["FirstFit"]


def test_a_file_given_twice_or_an_out_that_is_an_input_or_cannot_be_written_is_refused_first(tmp_path, capsys):
    f = tmp_path / "mine.py"
    f.write_text(GOOD)
    for args, says in [([str(f), str(tmp_path / "." / "mine.py")], f"{tmp_path / '.' / 'mine.py'}: given twice"),
                       ([str(f), "--out", str(f)], f"--out {f}: is one of the heuristic files evaluated"),
                       ([str(f), "--out", "/proc/r.csv"], "--out /proc/r.csv: /proc cannot hold a file")]:
        assert main(["evaluate", *args, "--task", "obp", "--suite", "nominal", "--workers", "1", "--no-progress"]) == 2
        assert says in capsys.readouterr().err
    assert f.read_text() == GOOD


def test_a_heuristic_invalid_everywhere_is_reported_and_the_exit_status_is_one(tmp_path, capsys):
    f = tmp_path / "broken.py"
    f.write_text("import numpy as np\n\ndef priority(item, bins):\n    return np.full(len(bins), np.nan)\n")
    assert main(["evaluate", str(f), "--task", "obp", "--suite", "nominal", "--baselines", "none",
                 "--workers", "2", "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "invalid" in captured.out and "non-finite" in captured.out
    assert captured.err.strip() == "raise-ahd evaluate: the heuristic given (broken) invalid on every instance"


def test_a_file_whose_module_code_raises_is_invalid_in_the_sandbox_not_run_here(tmp_path, capsys):
    f = tmp_path / "bad.py"
    f.write_text("raise RuntimeError('boom')\ndef priority(item, bins):\n    return bins\n")
    assert main(["evaluate", str(f), "--task", "obp", "--suite", "nominal", "--baselines", "none",
                 "--workers", "1", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "bad: invalid on 5 instances" in out and "RuntimeError: boom" in out


@pytest.mark.parametrize("content, message", [
    ("def priority(item, bins)\n    return bins\n", "syntax error"),
    ("x = 1\n", "expected one function"),
    ("def priority(item):\n    return item\n", "must take the arguments (item, bins)"),
    # Python reads it (its coding line says latin-1); it was called "not a Python file"
    ("# -*- coding: latin-1 -*-\n# caf\xe9\ndef priority(item, bins):\n    return bins\n".encode("latin-1"),
     "bad.py: not UTF-8 text (a heuristic file must be UTF-8 text)"),
])
def test_bad_heuristic_files_get_one_line(tmp_path, content, message):
    f = tmp_path / "bad.py"
    f.write_bytes(content) if isinstance(content, bytes) else f.write_text(content)
    code, out, err = run_cli("evaluate", str(f), "--task", "obp", "--suite", "nominal")
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["evaluate", "missing.py", "--task", "obp"], "cannot read"),
    (["evaluate", "--task", "nope"], "unknown task"),
    (["evaluate", "--task", "obp", "--baselines", "worstfit"], "unknown baseline"),
    (["evaluate", "--task", "obp", "--baselines", "none"], "nothing to evaluate"),
    # it told the command line to "name them apart with Heuristic(name, code=...)", the Python API's fix
    (["evaluate", "--task", "obp", "--baselines", "BestFit,bestfit"], "--baselines: BestFit named twice; name it once"),
])
def test_bad_arguments_get_one_line(args, message):
    code, out, err = run_cli(*args)
    assert code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("spec", ["bogus", "process:x", "dask://"])
def test_bad_executor_specs_get_one_line(spec):
    code, out, err = run_cli("evaluate", "--task", "ojsp", "--suite", "nominal", "--executor", spec)
    assert code == 2 and "executor" in err and "Traceback" not in err


def test_evaluate_runs_on_a_named_executor(capsys):
    assert main(["evaluate", "--task", "ojsp", "--suite", "nominal", "--executor", "serial", "--no-progress"]) == 0
    assert "SPT" in capsys.readouterr().out


SAMPLER_STYLE = ("import numpy as np\n\ndef priority(item, bins):\n    bins = np.asarray(bins, dtype=float)\n"
                 "    cap = max(float(np.max(bins, initial=0.0)), 1e-09)\n    gap = (bins - float(item)) / cap\n"
                 "    return np.nan_to_num(-gap + 0.5 * np.exp(-gap / 0.05), nan=-1e9, posinf=1e9, neginf=-1e9)\n")


def test_evaluate_with_jit_gives_the_same_table_and_says_what_compiled(tmp_path):
    pytest.importorskip("numba")
    f = tmp_path / "mine.py"
    f.write_text(SAMPLER_STYLE)
    # OBP at a tenth of its length (tests/_small_obp.py): what is checked is the compiled path's table and its count
    common = ("evaluate", str(f), "--task", SMALL_OBP, "--suite", "nominal", "--workers", "1", "--no-progress")
    code, plain, _ = run_cli(*common)
    code_at_once, at_once, _ = run_cli(*common, "--jit", "--jit-after", "0")
    code_later, later, _ = run_cli(*common, "--baselines", "none", "--jit", "--jit-after", "1000")
    assert code == code_at_once == code_later == 0
    table = plain.strip().splitlines()
    assert at_once.strip().splitlines()[:len(table)] == table  # the same metrics, heuristic and baselines
    assert "compiled path: 3 programs compiled, 0 on Python" in at_once
    assert "compiled path: 0 programs compiled, 0 on Python, 1 not evaluated long enough to compile" in later

    def mine(text):  # the heuristic's overall mean: the last column of the mean row
        return next(line.split()[-1] for line in text.splitlines() if line.startswith("mean"))

    assert mine(plain) == mine(later) == mine(at_once)


def test_evaluate_refuses_a_negative_jit_after_in_one_line(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text(GOOD)
    code, out, err = run_cli("evaluate", str(f), "--task", "obp", "--suite", "nominal", "--jit", "--jit-after", "-1")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "jit_after must be a number of seconds >= 0" in err


def test_every_classical_rule_of_a_task_is_a_baseline_evaluate_can_name(tmp_path, capsys):
    """``--baselines classical`` evaluates every classical rule of the task (the paper's and the
    others), a name picks one (in any case), each scored through the sandbox exactly as in this
    process; an unknown name lists them all."""
    from tasks import get_task
    from tasks.common.classical import classical_rules
    task = get_task("ojsp")
    out = tmp_path / "rows.csv"
    assert main(["evaluate", "--task", "ojsp", "--suite", "nominal", "--baselines", "mopnr,MWKR", "--workers", "2",
                 "--no-progress", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert {r["heuristic"] for r in rows} == {"MOPNR", "MWKR"}
    rules = classical_rules(task)
    for row in rows:
        instance = task.nominal_instances()[int(row["instance"])]
        assert float(row["metric"]) == task.evaluate(rules[row["heuristic"]], instance)
    assert main(["evaluate", "--task", "ojsp", "--suite", "nominal", "--baselines", "classical", "--workers", "2",
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in rules), printed[-1500:]
    assert main(["evaluate", "--task", "ojsp", "--baselines", "nosuch"]) == 2
    assert "ATC" in capsys.readouterr().err


def test_an_engine_that_fails_under_evaluate_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch):
    """A Dask scheduler lost while ``evaluate`` ran printed Python's traceback of the job's cancellation."""
    import concurrent.futures as cf

    from raise_plugin.commands import evaluate as command

    class Gone:
        """A place whose every call fails as Dask's do once the scheduler is lost."""
        workers = 1

        def submit(self, fn, *args, **kwargs):
            future = cf.Future()
            future.set_exception(cf.CancelledError("run_job-1 cancelled for reason: scheduler-connection-lost."))
            return future

    real = command.evaluate_suite
    monkeypatch.setattr(command, "evaluate_suite",
                        lambda *args, **kwargs: real(*args, **{**kwargs, "executor": Gone()}))
    f = tmp_path / "mine.py"
    f.write_text(GOOD)
    out = tmp_path / "r.csv"
    assert main(["evaluate", str(f), "--task", "obp", "--suite", "nominal", "--out", str(out), "--no-progress"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("raise-ahd: error: the engine running programs failed (its workers): CancelledError: run_job-1 "
                       "cancelled for reason: scheduler-connection-lost.; nothing was written: once it is back, the "
                       "same command evaluates again"), err
    assert not out.exists()


def test_evaluate_on_a_scheduler_no_worker_joins_says_so_in_one_line(bare_scheduler, capsys):
    """It said 'TimeoutError: No valid workers found', naming neither the scheduler nor what to do."""
    address = bare_scheduler.scheduler_address
    assert main(["evaluate", "--task", "ovrp", "--suite", "nominal", "--baselines", "SP-Insert", "--no-progress",
                 "--executor", f"dask://{address.removeprefix('tcp://')}"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"raise-ahd: error: the engine running programs failed (dask://{address.removeprefix('tcp://')}"
                       f"): TimeoutError: no Dask worker joined the scheduler at {address} within 1 s (start one: "
                       f"dask worker {address} --nthreads 1); nothing was written: once it is back, the same command "
                       "evaluates again"), err


@pytest.mark.parametrize("executor", ["serial", "process:2", "dask://local:2"])
def test_workers_beside_an_executor_that_says_where_programs_run_are_refused_in_one_line(executor, capsys):
    """They were ignored: `--executor serial --workers 3` evaluated on one worker, saying nothing (a run refuses
    them)."""
    assert main(["evaluate", "--task", "ovrp", "--suite", "nominal", "--baselines", "SP-Insert", "--no-progress",
                 "--executor", executor, "--workers", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"raise-ahd: error: workers: counts the local worker processes, and executor {executor!r} already "
                   "says where programs run: give --workers N or --executor process:N, not both, got 3"]
