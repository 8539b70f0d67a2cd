"""Hostile programs come back invalid with the right reason; the engine keeps going and the pool recovers."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from raise_plugin.engine import Engine, FailureKind, ProcessExecutor, SandboxLimits

from .conftest import BEST_FIT, ROOMY, SHORT, process_group

H = "import numpy as np\nimport os, sys, time, gc\n\ndef priority(item, bins):\n"

HOSTILE = {
    "infinite loop": ("    while True:\n        pass\n", FailureKind.TIMEOUT, "timed out after 2 s"),
    "sleep": ("    time.sleep(30)\n    return -bins\n", FailureKind.TIMEOUT, "timed out"),
    "20 GB allocation": ("    x = np.ones(20 * 10**9 // 8)\n    return -bins\n", FailureKind.MEMORY, "memory cap"),
    "20 GB bytearray": ("    x = bytearray(20 * 10**9)\n    return -bins\n", FailureKind.MEMORY, "memory cap"),
    # within the address space a process may reserve, past the budget of 512 MiB: held by the cap on
    # what a process writes, which a confined process sets without reading /proc (it may not)
    "1 GB written": ("    x = np.ones(10**9 // 8)\n    return -bins\n", FailureKind.MEMORY, "memory cap"),
    "fork bomb": ("    for _ in range(200):\n        if os.fork() == 0:\n            time.sleep(20)\n"
                  "            os._exit(0)\n    return -bins\n", FailureKind.HEURISTIC, "os.fork"),
    "os._exit": ("    os._exit(3)\n", FailureKind.WORKER_DIED, "exited with status 3"),
    "raising": ("    raise ValueError('boom')\n", FailureKind.HEURISTIC, "ValueError: boom"),
    "sys.exit": ("    sys.exit(0)\n", FailureKind.HEURISTIC, "SystemExit"),
    # the program's failure, not the task's (kind error), and no message left empty after a colon
    "GeneratorExit": ("    raise GeneratorExit\n", FailureKind.HEURISTIC, "the program raised GeneratorExit"),
    "NaN": ("    return np.full(len(bins), np.nan)\n", FailureKind.HEURISTIC, "non-finite"),
    "inf": ("    return np.full(len(bins), np.inf)\n", FailureKind.HEURISTIC, "non-finite"),
    "None": ("    return None\n", FailureKind.HEURISTIC, "returned None, expected an array"),
    "strings": ("    return ['a'] * len(bins)\n", FailureKind.HEURISTIC, "expected numbers"),
    "wrong length": ("    return -bins[:-1]\n", FailureKind.HEURISTIC, "expected ("),
    "printing megabytes": ("    print('x' * 10**6)\n    return -bins\n", FailureKind.HEURISTIC, "printed more than"),
    "writing to /tmp": ("    open('/tmp/raise-hostile-probe', 'w').write('x')\n    return -bins\n",
                        FailureKind.HEURISTIC, "sandbox: writing"),
    "huge file": ("    open('big', 'wb').write(b'x' * 5 * 2**20)\n    return -bins\n",
                  FailureKind.HEURISTIC, "File too large"),
    "signalling the engine": ("    os.kill(os.getppid(), 0)\n    return -bins\n", FailureKind.HEURISTIC, "os.kill"),
    "network": ("    import socket\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n    return -bins\n",
                FailureKind.HEURISTIC, "network"),
    "subprocess": ("    import subprocess\n    subprocess.run(['true'])\n    return -bins\n",
                   FailureKind.HEURISTIC, "not allowed"),
    "ctypes": ("    import ctypes\n    ctypes.CDLL(None).getpid()\n    return -bins\n", FailureKind.HEURISTIC, "ctypes"),
    "module-level crash": (None, FailureKind.PROGRAM, "RuntimeError"),
    "syntax error": (None, FailureKind.PROGRAM, "syntax error"),
}
SPECIAL = {
    "module-level crash": "raise RuntimeError('at import')\ndef priority(item, bins):\n    return -bins\n",
    "syntax error": "def priority(item, bins)\n    return -bins\n",
}


# Programs that change what they are scored by in their own process: the judge replays their
# decisions with the task it holds, so each scores what its decisions earn (or is invalid, where a
# decision taken on changed data is not a candidate of the real instance)
CHANGING = {
    "cached instance via gc": (
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, list) and o and isinstance(o[0], dict) and 'items' in o[0]:\n"
        "            o[0]['items'][:] = 1\n    return -bins\n"),
    "cached instance made writeable": (
        "    if hasattr(priority, 'done'):\n        return -bins\n    priority.done = True\n"
        "    for o in gc.get_objects():\n"
        "        if isinstance(o, list) and o and isinstance(o[0], dict) and 'items' in o[0]:\n"
        "            a = o[0]['items']\n            b = a if a.base is None else a.base\n"
        "            try:\n                b.setflags(write=True); a.setflags(write=True)\n"
        "            except Exception:\n                pass\n"
        "            try:\n                a[:] = 1\n            except Exception:\n                pass\n"
        "    return -bins\n"),
    "monkeypatching the task": "    import tasks.obp\n    tasks.obp.waste_ratio = lambda *a: 0.0\n    return -bins\n",
}


@pytest.mark.parametrize("name", list(CHANGING))
def test_a_program_that_changes_its_data_or_task_is_scored_by_its_decisions(task, engine, small_instances, name):
    earned = [task.evaluate(lambda item, bins: -bins, s) for s in small_instances]
    result = engine.evaluate(H + CHANGING[name], small_instances, split=1, timeout=GENEROUS)
    assert (result.valid and list(result.metrics) == earned) or result.kind == FailureKind.HEURISTIC, result
    after = engine.evaluate(BEST_FIT, small_instances, split=1, timeout=GENEROUS)
    assert list(after.metrics) == [task.evaluate(task.baselines["BestFit"], s) for s in small_instances]


def program(name: str) -> str:
    body = HOSTILE[name][0]
    return SPECIAL[name] if body is None else H + body


def _kinds(name: str) -> tuple:
    return HOSTILE[name][1] if isinstance(HOSTILE[name][1], tuple) else (HOSTILE[name][1],)


@pytest.fixture(scope="module")
def engine(pool):
    return Engine("obp", pool, limits=SHORT)


# Programs not meant to time out get a limit no busy machine reaches (a gc scan of the
# worker's heap can take seconds under load); the ones meant to, the short one.
GENEROUS = ROOMY.timeout


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_program_is_invalid_with_its_reason(engine, small_instances, name):
    kinds = _kinds(name)
    limit = SHORT.timeout if FailureKind.TIMEOUT in kinds else GENEROUS
    result = engine.evaluate(program(name), small_instances, split=1, timeout=limit)
    assert not result.valid, result
    assert result.kind in kinds, result
    assert HOSTILE[name][2] in result.reason, result.reason
    if FailureKind.TIMEOUT in kinds:
        assert result.seconds < limit + 60  # killed at its limit, not left running


def test_pool_recovers_and_good_programs_still_score_right(task, pool, engine, small_instances):
    expected = [task.evaluate(task.baselines["BestFit"], s) for s in small_instances]
    timed = [(program(n), SHORT.timeout if FailureKind.TIMEOUT in _kinds(n) else GENEROUS) for n in HOSTILE]
    futures = [engine.submit(code, small_instances, split=1, timeout=limit)
               for code, limit in timed + [(BEST_FIT, GENEROUS)] * 4]  # all submitted, then collected
    results = [f.result() for f in futures]
    assert [r.valid for r in results] == [False] * len(HOSTILE) + [True] * 4
    for r in results[len(HOSTILE):]:
        assert list(r.metrics) == expected
    assert pool.restarts() == 0  # a worker runs no program: its program processes died, not it
    assert None not in pool.worker_pids()


def test_timeout_kills_the_whole_process_tree(small_instances):
    body = ("import os, time\n\ndef priority(item, bins):\n"
            "    time.sleep(30)\n    return -bins\n")
    # without the audit hook and the kernel's filter a program may fork; its children must die
    # with its process
    limits = SandboxLimits(timeout=1.5, memory_mb=512, audit=False, confine=False)
    forking = ("import os, time\n\ndef priority(item, bins):\n"
               "    for _ in range(20):\n        if os.fork() == 0:\n            time.sleep(60)\n"
               "            os._exit(0)\n    time.sleep(30)\n    return -bins\n")
    with ProcessExecutor(1, limits) as pool:
        eng = Engine("obp", pool, limits=limits)
        for code in (body, forking):
            result = eng.evaluate(code, small_instances)
            assert result.kind == FailureKind.TIMEOUT
            assert not _group_members(result.worker)


def test_children_left_behind_make_the_result_invalid_and_are_killed(small_instances):
    limits = SandboxLimits(timeout=GENEROUS, memory_mb=512, audit=False, confine=False)
    code = ("import os, time\n\ndef priority(item, bins):\n"
            "    if not hasattr(priority, 'done'):\n        priority.done = True\n"
            "        for _ in range(50):\n            if os.fork() == 0:\n                time.sleep(60)\n"
            "                os._exit(0)\n    return -bins\n")
    with ProcessExecutor(1, limits) as pool:
        result = Engine("obp", pool, limits=limits).evaluate(code, small_instances)
        # root ignores RLIMIT_NPROC: the forks succeed, and die with the program's process group
        if result.kind == FailureKind.HEURISTIC:  # RLIMIT_NPROC refused the first fork
            assert "Resource temporarily unavailable" in result.reason
        else:
            assert result.valid
        time.sleep(0.2)
        assert not _group_members(result.worker)


def test_files_written_stay_in_the_private_directory(small_instances, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = ("import os\n\ndef priority(item, bins):\n"
            "    with open('note.txt', 'a') as f:\n        f.write('x')\n    return -bins\n")
    with ProcessExecutor(1, ROOMY) as pool:
        result = Engine("obp", pool, limits=ROOMY).evaluate(code, small_instances)
    assert result.valid, result
    assert not (tmp_path / "note.txt").exists()
    assert not Path("/tmp/raise-hostile-probe").exists()


def test_secrets_are_not_inherited(small_instances, monkeypatch):
    monkeypatch.setenv("RAISE_TEST_API_KEY", "sk-not-for-programs")
    monkeypatch.setenv("SOME_TOKEN_VALUE", "t")
    code = ("import os\n\ndef priority(item, bins):\n"
            "    leaked = [k for k in os.environ if 'API_KEY' in k or 'TOKEN' in k]\n"
            "    if leaked:\n        raise RuntimeError('leaked ' + ','.join(leaked))\n    return -bins\n")
    with ProcessExecutor(1, ROOMY) as pool:
        result = Engine("obp", pool, limits=ROOMY).evaluate(code, small_instances)
    assert result.valid, result.reason
    assert os.environ["RAISE_TEST_API_KEY"] == "sk-not-for-programs"  # the engine's own environment is intact


def test_modifying_the_bins_argument_does_not_leak_into_the_simulation(task, engine, small_instances):
    code = "import numpy as np\n\ndef priority(item, bins):\n    bins -= item\n    bins[:] = -bins\n    return bins\n"
    pure = "import numpy as np\n\ndef priority(item, bins):\n    return -(bins - item)\n"
    mutated = engine.evaluate(code, small_instances, timeout=GENEROUS)
    clean = engine.evaluate(pure, small_instances, timeout=GENEROUS)
    assert mutated.valid and mutated.metrics == clean.metrics


def test_the_programs_output_does_not_reach_the_engine(engine, small_instances, capfd):
    code = "import sys\n\ndef priority(item, bins):\n    print('hello from the program')\n" \
           "    sys.stderr.write('oops')\n    return -bins\n"
    assert engine.evaluate(code, small_instances, timeout=GENEROUS).valid
    out, err = capfd.readouterr()
    assert "hello from the program" not in out and "oops" not in err


def _group_members(worker: int | None) -> list[int]:
    """Processes still running in the session of ``worker`` outside its own process group (its
    programs' processes and anything they started), zombies left out (Linux; empty elsewhere)."""
    if worker is None:
        return []
    deadline = time.monotonic() + 5  # killed processes take a moment to exit
    while True:
        alive = [pid for pid, state in process_group(worker, session=True) if state != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def test_a_killed_worker_is_replaced_and_its_job_retried(task, small_instances):
    slow = "import time\n\ndef priority(item, bins):\n    time.sleep(0.01)\n    return -bins\n"
    expected = [task.evaluate(task.baselines["BestFit"], s) for s in small_instances]
    limits = SandboxLimits(timeout=20, memory_mb=512)
    with ProcessExecutor(1, limits) as pool:
        eng = Engine("obp", pool, limits=limits)
        assert eng.evaluate(BEST_FIT, small_instances).valid
        future = eng.submit(slow, small_instances)
        time.sleep(0.5)
        victim = pool.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        result = future.result(timeout=30)
        assert result.valid and list(result.metrics) == expected
        assert pool.restarts() == 1 and pool.worker_pids()[0] != victim


def test_a_killed_worker_without_retries_gives_an_invalid_result(small_instances):
    slow = "import time\n\ndef priority(item, bins):\n    time.sleep(0.01)\n    return -bins\n"
    limits = SandboxLimits(timeout=20, memory_mb=512, retries=0)
    with ProcessExecutor(1, limits) as pool:
        eng = Engine("obp", pool, limits=limits)
        assert eng.evaluate(BEST_FIT, small_instances).valid
        future = eng.submit(slow, small_instances)
        time.sleep(0.5)
        os.kill(pool.worker_pids()[0], signal.SIGKILL)
        result = future.result(timeout=30)
        assert result.kind == FailureKind.WORKER_DIED and "SIGKILL" in result.reason
        assert eng.evaluate(BEST_FIT, small_instances).valid  # and the pool goes on
