"""A stop signal sent to the engine's whole process group (Ctrl-C in a shell, ``timeout``, systemd,
a batch scheduler) leaves its workers running: the engine's process decides how to stop, and the
calls under way end as they would have. The clean fork server is in that group and the workers
die with it, so it ignores SIGTERM as multiprocessing has it ignore SIGINT; a worker keeps the
usual SIGTERM, and its own session keeps it out of the group."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# an engine that handles the signal itself (as `raise-ahd run` does), sends it to its own group while
# a call is under way in its worker, and prints what that call and the next one gave
ENGINE = textwrap.dedent("""
    import os, signal, sys, time
    from raise_plugin.engine import ProcessExecutor, SandboxLimits
    received = []
    signal.signal(int(sys.argv[1]), lambda signum, frame: received.append(signum))
    with ProcessExecutor(1, SandboxLimits(timeout=60)) as pool:
        worker = pool.submit(os.getpid).result()
        under_way = pool.submit(time.sleep, 1.0)
        time.sleep(0.3)
        os.killpg(0, int(sys.argv[1]))
        try:
            outcome = repr(under_way.result())
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        print(outcome, received == [int(sys.argv[1])], pool.submit(os.getpid).result() == worker)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_to_the_group_leaves_the_call_under_way_and_its_worker(sig):
    done = subprocess.run([sys.executable, "-c", ENGINE, str(int(sig))], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, start_new_session=True)  # a group of its own: the signal reaches no test
    assert done.returncode == 0, done.stderr[-2000:]
    # before, SIGTERM killed the fork server and so the worker: "WorkerDied: the worker process exited
    # with status 255 during the call", and the inner search a run had under way was skipped for good
    assert done.stdout.split() == ["None", "True", "True"], done.stdout + done.stderr[-2000:]
