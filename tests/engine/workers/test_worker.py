"""A worker whose spawner is gone (killed from outside: the OOM killer, a user's ``kill -9``) ends
rather than fail every job it is given: the engine starts a fresh worker and runs the job again."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from raise_plugin.engine import Engine, FailureKind, ProcessExecutor

from ..conftest import BEST_FIT, ROOMY

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the spawner in /proc")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def _kill_and_wait(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def test_a_worker_whose_spawner_was_killed_is_replaced_and_its_jobs_still_evaluate(small_instances):
    with ProcessExecutor(1, ROOMY) as pool:
        engine = Engine("obp", pool, limits=ROOMY)
        before = engine.evaluate(BEST_FIT, small_instances)
        assert before.valid
        worker = pool.worker_pids()[0]
        (spawner,) = _children(worker)  # a worker at rest has one child: its spawner
        _kill_and_wait(spawner)
        for k in range(3):  # every later job too: a worker without a spawner failed them all
            after = engine.evaluate(BEST_FIT.replace("-bins", f"-bins + {k}"), small_instances)
            assert after.kind == FailureKind.OK, after.reason
            assert after.metrics == before.metrics
        assert pool.worker_pids()[0] != worker and pool.restarts() == 1
