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
    done = bench("validation_table.py", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    rows = {line.split(" | ")[0]: line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert rows["| GP"].startswith("| GP | 2 | 1.4500 ± ")
    assert rows["| RAISE-GP (eps=0.002)"] == "| RAISE-GP (eps=0.002) | 1 | inf ± nan | 0 |"
