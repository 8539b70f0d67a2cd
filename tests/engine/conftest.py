"""Shared fixtures: small OBP instances and sandbox pools with short limits."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from raise_plugin.engine import ProcessExecutor, SandboxLimits
from tasks import get_task

BEST_FIT = "import numpy as np\n\ndef priority(item, bins):\n    return -bins\n"
FIRST_FIT = "import numpy as np\n\ndef priority(item, bins):\n    return np.zeros(len(bins))\n"
# SHORT: for programs meant to time out; ROOMY: for the others, a limit no busy machine reaches
SHORT = SandboxLimits(timeout=2.0, memory_mb=512, file_mb=1, output_mb=1)
ROOMY = SandboxLimits(timeout=120.0, memory_mb=512, file_mb=1, output_mb=1)


@pytest.fixture(scope="session")
def task():
    return get_task("obp")


@pytest.fixture(scope="session")
def small_instances(task):
    rng = np.random.default_rng(7)
    return [task.make_instance(rng.integers(1, 100, size=60), rng, capacity=100) for _ in range(3)]


@pytest.fixture(scope="module")
def pool():
    with ProcessExecutor(2, SHORT) as executor:
        yield executor


def process_group(pgid: int, session: bool = False) -> list[tuple[int, str]]:
    """``(pid, state)`` of every process in group ``pgid`` (with ``session``: in session ``pgid``
    but not in group ``pgid``), zombies (state ``Z``) included; empty where there is no ``/proc``."""
    found = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        group, sid = int(fields[2]), int(fields[3])
        if (sid == pgid and group != pgid) if session else group == pgid:
            found.append((int(entry.name), fields[0]))
    return found
