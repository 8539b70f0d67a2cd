"""What the clean fork server preloads is copied at every program's start (a worker forks its spawner
from what it holds, the spawner a process for every program): none of scipy's linear algebra, spatial,
optimisation, statistics or special-function modules, which made a fork of it half again as costly, or
(scipy.special, 13 MB, loaded by the adversary's bases) half as costly again (docs/engine.md, "Where
workers come from")."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from raise_plugin.engine.workers.cleanstart import PRELOAD

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("scipy.linalg", "scipy.spatial", "scipy.optimize", "scipy.stats", "scipy.sparse", "scipy.special")


def test_the_server_preloads_the_tasks_and_the_engine_without_scipy_s_heavy_modules():
    code = (f"import importlib, json, sys\nfor m in {PRELOAD!r}: importlib.import_module(m)\n"
            "print(json.dumps(list(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          check=True)
    loaded = set(json.loads(done.stdout))
    assert {"numpy", "tasks.obp", "tasks.ojsp", "tasks.ovrp", "raise_plugin.engine", "raise_plugin.adversary"} <= loaded
    assert not {m for m in loaded if m.startswith(HEAVY)}
