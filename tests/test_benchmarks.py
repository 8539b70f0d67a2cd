"""The benchmark scripts: bad arguments stop them in one line, exit 2, before any work; damaged records are read."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def bench(script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_validation_table_refuses_a_folder_that_is_no_compare_in_one_line(tmp_path):
    """It ended in FileNotFoundError's traceback ('nosuch/runs')."""
    done = bench("validation_table.py", "nosuch", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("validation_table.py: error: nosuch: not a compare's output folder "
                                            "(no runs/ in it); give the --out of raise-ahd compare")
    assert list(tmp_path.iterdir()) == []


def test_validation_table_says_so_when_no_run_has_a_trace(tmp_path):
    """It printed the table's header and nothing else."""
    (tmp_path / "cmp" / "runs" / "gp-plain-seed0").mkdir(parents=True)
    (tmp_path / "cmp" / "runs" / "gp-plain-seed0" / "summary.json").write_text(json.dumps({"finished": True}))
    done = bench("validation_table.py", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0
    assert f"no finished run in {tmp_path / 'cmp' / 'runs'} has a validation trace" in done.stdout


def test_validation_table_reads_a_trace_cut_short_and_a_final_program_that_failed_everywhere(tmp_path):
    """A last line cut short by a kill was a JSONDecodeError; a point whose program failed on every validation
    instance (validation_metric null) a TypeError."""
    point = {"generation": 2, "samples": 8, "program_id": "a", "validation_metric": 1.5,
             "best_baseline": {"name": "SP-Insert", "metric": 1.36}}
    runs = tmp_path / "cmp" / "runs"
    for name, lines in {"gp-plain-seed0": [json.dumps(point), '{"generation": 3, "sam'],
                        "gp-plain-seed1": [json.dumps({**point, "validation_metric": 1.4})],
                        "gp-raise-eps0.002-seed0": [json.dumps({**point, "validation_metric": None})]}.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "validation.jsonl").write_text("\n".join(lines))
        (runs / name / "summary.json").write_text(json.dumps({"finished": True}))
    # a run killed mid-way: its last point is not the program it hands on
    (runs / "gp-plain-seed2").mkdir()
    (runs / "gp-plain-seed2" / "validation.jsonl").write_text(json.dumps({**point, "validation_metric": 9.0}))
    (runs / "gp-plain-seed2" / "summary.json").write_text(json.dumps({"finished": False}))
    done = bench("validation_table.py", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    rows = {line.split(" | ")[0]: line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert rows["| GP"].startswith("| GP | 2 | 1.4500 ± ")
    assert rows["| RAISE-GP (eps=0.002)"] == "| RAISE-GP (eps=0.002) | 1 | inf ± nan | 0 |"
    assert (f"left out: {runs / 'gp-plain-seed2'} has not finished (raise-ahd resume {runs / 'gp-plain-seed2'})"
            in done.stdout.splitlines())


@pytest.mark.parametrize("script, args, said", [
    ("ovrp_speed.py", ["--repeat", "0"], "argument --repeat: must be a whole number >= 1, got '0'"),  # TypeError
    ("replay_cost.py", ["--repeat", "0"], "argument --repeat: must be a whole number >= 1"),  # StatisticsError
    ("obp_vs_host.py", ["--repeat", "0"], "argument --repeat: must be a whole number >= 1"),  # printed inf and nanx
    ("judge_cost.py", ["--tasks", "obp,nosuch"], "argument --tasks: unknown task 'nosuch'; registered: "),
    ("gp_settings.py", ["--seeds", "0"], "argument --seeds: must be a whole number >= 1"),  # printed NaN, chose one
    ("gp_settings.py", ["--task", "nosuch"], "argument --task: unknown task 'nosuch'"),
    ("classical_rules.py", ["table", "--per-dataset", "0"], "argument --per-dataset: must be a whole number >= 1"),
    ("robust_settings.py", ["--task", "nosuch", "--out", "grid"], "argument --task: unknown task 'nosuch'"),
    ("robust_settings.py", ["--seeds", "0,x", "--out", "grid"],
     "argument --seeds: must be whole numbers >= 0 separated by commas, got '0,x'"),
    ("robust_settings.py", ["--only", "plain,nosuch", "--out", "grid"],  # KeyError: 'nosuch'
     "--only: 'nosuch' is not a setting of the objective grid; choose from plain, "),
    ("sampler_throughput.py", ["--samplers", "0"], "argument --samplers: must be whole numbers >= 1 separated"),
    ("paper_scale_speed.py", ["--budget", "0"], "argument --budget: must be a whole number >= 1"),
    ("final_selection.py", ["nosuch"], "nosuch: no validation_cache.json; give the --out of robust_settings.py"),
    ("heldout_runs.py", ["nosuch"], "nosuch is not a run directory (no config.json)"),
    # written at the end: FileNotFoundError or IsADirectoryError after the whole measurement
    ("judge_cost.py", ["--json", "."], "argument --json: .: is a directory"),
    ("paper_scale_speed.py", ["--json", "/proc/x.json"], "argument --json: /proc/x.json: /proc cannot hold a file"),
])
def test_a_bad_argument_stops_a_benchmark_in_one_line_writing_nothing(tmp_path, script, args, said):
    """Each ended in a traceback, printed nonsense (inf, nan) or, for robust_settings.py, made its --out first."""
    done = bench(script, *args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"{script}: error: {said}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script, args, said", [
    ("run_cores.py", ["--task", "ovrp"], "raise-ahd: error: budget 8 at pop_size 4 makes 2 host generations"),
    ("compare_jobs.py", ["--seeds", "1", "--jobs", "1"],
     "compare_jobs.py: error: every RAISE row would equal its plain twin's: budget 8 at pop_size 4"),
])
def test_a_run_a_benchmark_starts_that_refuses_its_settings_ends_it_with_the_run_s_one_line(tmp_path, script, args,
                                                                                           said):
    """At a budget too small for a refresh, run_cores.py printed the run's error, then CalledProcessError's
    traceback; compare_jobs.py the UserError's traceback."""
    done = bench(script, *args, "--budget", "8", "--pop-size", "4", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith(said)
    assert list(tmp_path.iterdir()) == []


def test_heldout_runs_refuses_a_run_that_has_not_finished_in_one_line(tmp_path):
    """A run killed mid-way was reported as if its best so far were its final program."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"task": "ovrp", "seed": 0}))
    (run / "summary.json").write_text(json.dumps({"finished": False, "samples": 4}))
    done = bench("heldout_runs.py", str(run), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (f"heldout_runs.py: error: {run}: the run has not finished "
                                            f"(raise-ahd resume {run})")


def test_robust_settings_exits_non_zero_when_a_run_it_starts_fails(tmp_path):
    """Every run refused (a flag no run takes in --common), it printed 'exit 2' per run and a table of the baselines
    alone, and exited 0 as if the grid had been measured."""
    out = tmp_path / "grid"
    done = bench("robust_settings.py", "--task", "ovrp", "--only", "plain", "--seeds", "0", "--budget", "4",
                 "--pop-size", "2", "--per-dataset", "1", "--common=--no-such-flag", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "plain seed 0: exit 2" in done.stdout and "| SP-Insert | baseline |" in done.stdout
    assert done.stderr.splitlines()[-1] == f"robust_settings.py: 1 of 1 runs failed: their logs are in {out / 'logs'}"


def test_every_benchmark_measures_the_code_of_its_own_checkout():
    """Eight scripts imported raise_plugin and tasks from wherever the venv's install points: run from a second
    checkout, they measured the first one's code without a word. Each puts its checkout first on the path before it
    imports the project."""
    import ast

    late = []
    for script in sorted(BENCHMARKS.glob("*.py")):
        tree = ast.parse(script.read_text())
        project = next((node.lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                        and {(a.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
                             for a in node.names} & {"raise_plugin", "tasks"}), None)
        if project is None:
            continue
        put_first = [node.lineno for node in tree.body if isinstance(node, ast.Expr)
                     and "sys.path.insert(0," in ast.unparse(node) and node.lineno < project]
        if not put_first:
            late.append(f"{script.name}:{project}")
    assert late == [], "these import the project before putting their checkout first"
