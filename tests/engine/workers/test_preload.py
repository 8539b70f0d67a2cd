"""What the clean fork server preloads is copied at every program's start (a worker forks its spawner
from what it holds, the spawner a process for every program): it holds no task and none of scipy's
linear algebra, which doubled what a fork copies (docs/engine.md, "Where workers come from")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from raise_plugin.engine.workers.cleanstart import PRELOAD

ROOT = Path(__file__).resolve().parents[3]


def _loaded_after(modules: list[str]) -> set[str]:
    code = (f"import importlib, json, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(list(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          check=True)
    return set(json.loads(done.stdout))


def test_the_server_preloads_no_task_and_no_linear_algebra():
    loaded = _loaded_after(PRELOAD)
    assert "raise_plugin.engine" in loaded and "numpy" in loaded
    assert not {m for m in loaded if m.startswith(("tasks.obp", "tasks.ojsp", "tasks.ovrp", "raise_plugin.adversary"))}
    assert not {m for m in loaded if m.startswith(("scipy.linalg", "scipy.spatial", "scipy.optimize", "scipy.stats"))}


def test_a_task_loaded_after_it_brings_no_linear_algebra():
    loaded = _loaded_after([*PRELOAD, "tasks.obp", "tasks.ojsp", "tasks.ovrp"])
    assert not {m for m in loaded if m.startswith(("scipy.linalg", "scipy.spatial", "scipy.optimize"))}
