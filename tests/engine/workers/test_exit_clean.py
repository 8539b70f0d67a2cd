"""A command leaves nothing behind: when ``raise-ahd`` exits, every process it started (the
clean fork server, the sandboxed workers, multiprocessing's resource tracker) has ended and
been reaped, so its process group holds no process, not even a zombie for init to reap."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robust_helpers import SMALL_OBP

from ..conftest import process_group

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")


def _group(pgid: int) -> list[str]:
    """``pid state`` of every process in group ``pgid``, zombies included."""
    return [f"{pid} {state}" for pid, state in process_group(pgid)]


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
    # one nominal instance and a small inner search: the same processes (engine, workers, inner
    # search, validation trace) for less work
    code, left = _run_alone(["run", "--task", SMALL_OBP, "--tau", "1", "--budget", "6", "--pop-size", "4",
                             "--nominal", "1", "--inner-population", "4", "--inner-generations", "1",
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


# a pool left open at exit, and a process the engine does not know of that holds the resource
# tracker's pipe (a forked copy of this process, in a session of its own): multiprocessing's
# own stop of the tracker would wait for that process; ours kills the tracker after a bound
LEFT_OPEN = """
import os
import time
from multiprocessing import resource_tracker

from raise_plugin.engine import ProcessExecutor
from raise_plugin.engine.workers.cleanstart import _stop_tracker

pool = ProcessExecutor(2)
assert pool.submit(sum, [1, 2]).result() == 3
tracker = resource_tracker._resource_tracker._pid
child = os.fork()
if child == 0:
    os.setsid()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # not the test's pipes: only the tracker's is to be held
    os.dup2(quiet, 2)
    time.sleep(120)
    os._exit(0)
start = time.monotonic()
_stop_tracker(1.0)
print(child, tracker, time.monotonic() - start, flush=True)
"""


def test_the_tracker_is_stopped_within_its_bound_whoever_holds_its_pipe_and_the_exit_leaves_nothing():
    process = subprocess.Popen([sys.executable, "-c", LEFT_OPEN], cwd=Path(__file__).resolve().parents[2],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, text=True)
    holder = None
    try:
        holder, tracker, seconds = process.stdout.readline().split()
        holder = int(holder)
        out, err = process.communicate(timeout=60)
        left = _group(process.pid)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the process did not exit within 60 s")
    finally:
        if holder:
            os.kill(holder, signal.SIGKILL)
    assert process.returncode == 0, err
    assert 1.0 <= float(seconds) < 5.0  # it waited its bound for the tracker, then killed it
    assert not Path(f"/proc/{tracker}").exists()  # killed and reaped
    assert left == []  # the workers and the fork server too


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are told apart through /proc")
def test_a_killed_group_whose_only_process_awaits_reaping_counts_as_gone_and_a_running_one_does_not():
    # an orphan adopted by an init that reaps slowly stays a zombie for a while: it still answers
    # killpg(pgid, 0) but runs nothing, and waiting a second for it after every worker kill cost
    # whole seconds per run
    from raise_plugin.engine.workers import handle as worker_handle

    zombie = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.killpg(zombie.pid, 0)  # the group still answers
        assert not worker_handle._group_runs(zombie.pid)
        assert worker_handle._group_runs(running.pid)
    finally:
        running.kill()
        running.wait()
        zombie.wait()
    assert not worker_handle._group_runs(running.pid)
