"""examples/robust_your_task.py runs: a task declared through the adapter, registered by a script,
served to evaluation workers, searched robustly offline."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "robust_your_task.py"


def test_the_example_declares_a_task_and_runs_robust_eoh_on_it(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("30 samples") and "refreshes" in lines[0]
    assert lines[1].startswith("nominal") and lines[2].startswith("validation") and "robust EoH" in lines[2]
