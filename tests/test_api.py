"""The plugin from one import: tasks, methods, the harness, statistics and figures, with no
need to import the top-level ``tasks`` package (which a user's tasks.py could hide)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import raise_plugin as rp

ROOT = Path(__file__).resolve().parents[1]


def test_one_import_exposes_tasks_methods_the_harness_statistics_and_figures():
    assert rp.get_task("knapsack").name == "knapsack"
    import raise_plugin.robust.core  # noqa: F401 - the subpackage imported: rp.robust stays the function
    assert callable(rp.robust) and rp.robust.__module__.startswith("raise_plugin.robust")
    assert callable(rp.compare) and callable(rp.run_compare)
    assert rp.get_method("moh").__name__ == "MoH" and rp.get_method("eohs").__name__ == "EoHS"
    assert callable(rp.stats.compare_paired) and callable(rp.figures.plot_convergence)
    assert callable(rp.paper_tables.significance_summary)
    assert issubclass(rp.HostTask, rp.Task) and rp.ShiftDimension("x", 4).cells == 4
    assert set(rp.__all__) <= set(dir(rp))


def test_a_tasks_py_in_the_working_directory_does_not_hide_the_plugin(tmp_path):
    (tmp_path / "tasks.py").write_text("raise RuntimeError('the notebook author\\'s own tasks.py')\n")
    code = "import raise_plugin as rp; print(rp.get_task('cvrp').name)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.strip() == "cvrp"
    (tmp_path / "tasks.py").write_text("NAME = 'mine'\n")
    proc = subprocess.run([sys.executable, "-c", "import tasks, raise_plugin"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode != 0 and "hides the plugin's task package; rename it" in proc.stderr
