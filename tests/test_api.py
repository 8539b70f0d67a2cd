"""The plugin from one import: tasks, methods, the harness, statistics and figures, with no
need to import the top-level ``tasks`` package (which a user's tasks.py could hide)."""
from __future__ import annotations

import json
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


NUMBERS = ("samples", "budget", "generations", "refreshes", "instance_set_version", "finished", "stopped")


def test_run_returns_its_summary_and_a_resumed_run_returns_its_own(tmp_path):
    config = rp.RunConfig(task="knapsack", robust=True, budget=8, pop_size=4, tau=1, epsilon=0.002,
                          out=str(tmp_path / "run"))
    method = rp.start_run(config)
    summary = method.run()
    assert isinstance(summary, dict) and summary["finished"] is True
    again = method.summary(finished=True)
    assert {k: summary[k] for k in NUMBERS} == {k: again[k] for k in NUMBERS}
    assert summary["samples"] == 8 and summary["refreshes"] >= 1
    assert summary["best"] == again["best"] and summary["best"]["robust_score"] is not None
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert {k: on_disk[k] for k in NUMBERS} == {k: summary[k] for k in NUMBERS}
    resumed = rp.resume_run(tmp_path / "run", budget=12)
    more = resumed.run()
    assert more["samples"] == 12 and more["budget"] == 12 and more["finished"] is True
    assert more["samples"] == resumed.summary()["samples"]

