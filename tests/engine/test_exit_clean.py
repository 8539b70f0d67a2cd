"""A command leaves nothing behind: when ``raise-ahd`` exits, every process it started (the
clean fork server, the sandboxed workers, multiprocessing's resource tracker) has ended and
been reaped, so its process group holds no process, not even a zombie for init to reap."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")


def _group(pgid: int) -> list[str]:
    """``pid state`` of every process in group ``pgid``, zombies included."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            found.append(f"{entry.name} {fields[0]}")
    return found


def _run_alone(args: list[str], cwd: Path) -> tuple[int, list[str]]:
    """Run ``raise-ahd ARGS`` as the leader of a new process group; its exit status and what is
    left in the group the moment it has exited."""
    process = subprocess.Popen([sys.executable, "-m", "raise_plugin.cli", *args], cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    process.wait(timeout=300)
    left = _group(process.pid)
    process.stderr.close()
    return process.returncode, left


def test_a_robust_run_leaves_no_process_behind(tmp_path):
    code, left = _run_alone(["run", "--task", "obp", "--tau", "1", "--budget", "6", "--pop-size", "4",
                             "--seed", "0", "--no-progress", "--out", str(tmp_path / "run")], tmp_path)
    assert code == 0
    assert left == []


def test_an_evaluation_with_a_failing_program_leaves_no_process_behind(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\n\ndef priority(item, bins):\n    raise ValueError('no')\n")
    code, left = _run_alone(["evaluate", str(bad), "--task", "obp", "--suite", "nominal", "--no-progress"],
                            tmp_path)
    assert code == 1  # every heuristic invalid everywhere
    assert left == []
