"""docs/tasks.md's walkthrough as written: its task file is examples/load_balance.py, and its
commands run on that file, named by its path, without packaging; the same compare from Python
(examples/compare_from_python.py) shows its table and figures."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from raise_plugin.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "tasks.md").read_text()


def block_after(marker: str) -> str:
    found = re.search(re.escape(f"<!-- walkthrough: {marker} -->") + r"\n```\w*\n(.*?)```", DOC, re.S)
    assert found, f"docs/tasks.md has no walkthrough block {marker!r}"
    return found.group(1)


@pytest.fixture
def walkthrough_dir(tmp_path, monkeypatch, fresh_registry):
    (tmp_path / "load_balance.py").write_text(block_after("load_balance.py"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_documented_task_file_is_the_example():
    assert block_after("load_balance.py") == (ROOT / "examples" / "load_balance.py").read_text()


@pytest.mark.slow  # end to end: a compare of 12 runs
def test_the_documented_commands_run_on_the_task_file(walkthrough_dir, capsys):
    commands = [line for line in block_after("commands").splitlines() if line.strip()]
    assert [c.split()[1] for c in commands] == ["tasks", "evaluate", "run", "compare"]
    outputs, said = [], []
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "raise-ahd"
        assert main(argv[1:]) == 0, command
        captured = capsys.readouterr()
        outputs.append(captured.out)
        said += [line for line in captured.err.splitlines() if line.startswith("raise-ahd: note: ")]
    # the task cannot draw a nominal set of its own: said once, not again by each of the compare's 12 runs
    assert sum("task load_balance has one nominal set" in line for line in said) == 1
    assert outputs[0].startswith("load_balance LoadBalance: shift job size, K = 20")
    assert "LeastLoaded" in outputs[1] and "gamma" in outputs[1]
    assert "best robust" in outputs[2] and (walkthrough_dir / "lb-run" / "summary.json").exists()
    report = (walkthrough_dir / "lb-compare" / "report.md").read_text()
    for row in ("| EoH |", "| EoH-S |", "| MoH |", "| RAISE-MoH (eps=0.002) |", "| LeastLoaded |"):
        assert row in report
    assert (walkthrough_dir / "lb-compare" / "adversarial_distributions.png").exists()
    # the example, on the commands' folder and naming the task as they did: the same compare from
    # Python finds its twelve runs finished, trains and evaluates none again, and shows the same
    # table and the figures
    runs = walkthrough_dir / "lb-compare" / "runs"
    written = {p: p.stat().st_mtime_ns for p in (*runs.glob("*/samples.jsonl"), *runs.parent.glob("results/*"))}
    assert len([p for p in written if p.name == "samples.jsonl"]) == 12
    example = subprocess.run([sys.executable, str(ROOT / "examples" / "compare_from_python.py"),
                              str(walkthrough_dir / "lb-compare"), "load_balance.py:LoadBalance"],
                             capture_output=True, text=True, cwd=walkthrough_dir, timeout=300)
    assert example.returncode == 0, example.stderr[-2000:]
    assert {p: p.stat().st_mtime_ns for p in written} == written
    assert not (walkthrough_dir / "lb-compare" / "superseded").exists()
    out = example.stdout
    assert out.startswith("task load_balance: shift job size, baselines LeastLoaded, FullestThatFits")
    table = (walkthrough_dir / "lb-compare" / "table_all_distributions.md").read_text().splitlines()
    assert next(line for line in table if line.startswith("| EoH-S |")) in out  # the compare's own table
    for row in ("| EoH |", "| EoH-S |", "| MoH |", "| RAISE-MoH (eps=0.002) |"):
        assert row in out
    assert "MoH vs " in out and "(best baseline)" in out
    assert "moh-raise-eps0.002 vs moh-plain, by seed: " in out
    assert ("figures: convergence.png, convergence.pdf, adversarial_distributions.png, adversarial_distributions.pdf, "
            "convergence_again.png") in out  # PNG and PDF, from Python as from the command line
    assert (walkthrough_dir / "lb-compare" / "convergence_again.png").stat().st_size > 0
