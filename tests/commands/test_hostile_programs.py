"""A hostile heuristic file given to the CLI: its code, top level included, runs only in the
sandbox, so it writes nothing, reaches no listener, finds no key, leaves no process, and is
reported invalid in bounded time with a non-zero exit."""
from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from raise_plugin.cli import main

KEY = "sk-secret-cli-8d2e"
FAIL = "\ndef priority(item, bins):\n    raise RuntimeError('stop here')\n"

TOP_LEVEL = {
    "writes a file": "open({marker!r}, 'w').write('x')\n",
    "opens a socket": "import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'hello')\n",
    "reads the key": ("import os\nopen({marker!r}, 'w').write(os.environ.get('OPENAI_API_KEY', ''))\n"),
    "forks 50 processes": ("import os, time\nfor _ in range(50):\n    if os.fork() == 0:\n"
                           "        time.sleep(60)\n        os._exit(0)\n"),
    "allocates 8 GB": "x = bytearray(8 * 2 ** 30)\n",
    "ends the process": "import os\nos._exit(0)\n",
    "loops for ever": "while True:\n    pass\n",
}


@pytest.fixture()
def listener():
    """A TCP listener on 127.0.0.1 that records what it receives."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                received.append(conn.recv(100))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(2)
    server.close()


def _left_after(before: set, seconds: float = 10.0) -> set:
    """The descendants not in ``before`` still alive after at most ``seconds``: a process the engine
    killed may still be in its exit (a program that mapped 8 GB takes a moment to unmap it)."""
    deadline = time.monotonic() + seconds
    while (left := set(_children()) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _children() -> list[int]:
    """This process's descendants still alive (Linux; empty elsewhere)."""
    me, found, parents = os.getpid(), [], {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    for pid in parents:
        p = pid
        while p in parents and p != me:
            p = parents[p]
        if p == me and pid != me:
            found.append(pid)
    return found


@pytest.fixture(scope="module")
def server():
    """The engine's clean fork server (and multiprocessing's resource tracker): started once,
    they are the engine's processes, not the program's."""
    from raise_plugin.engine.workers.cleanstart import _the_server
    _the_server().ensure_running()


@pytest.mark.parametrize("case", list(TOP_LEVEL))
def test_hostile_top_level_code_runs_only_in_the_sandbox(case, server, tmp_path, listener, monkeypatch, capsys):
    port, received = listener
    marker = tmp_path / "outside.txt"
    heuristic = tmp_path / "hostile.py"
    heuristic.write_text(TOP_LEVEL[case].format(marker=str(marker), port=port) + FAIL)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    before = set(_children())
    start = time.perf_counter()
    code = main(["evaluate", str(heuristic), "--task", "obp", "--suite", "nominal", "--baselines", "none",
                 "--workers", "1", "--timeout", "3", "--no-progress"])
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "hostile: invalid on 5 instances" in out
    said = [line for line in err.strip().splitlines() if not line.startswith("raise-ahd: note:")]  # once a process
    assert "invalid on every instance" in err and len(said) == 1
    assert KEY not in out + err
    assert not marker.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["hostile.py"]
    time.sleep(0.3)
    assert not received
    assert seconds < 60, seconds
    assert not _left_after(before)


def test_checking_a_file_early_does_not_run_it(tmp_path):
    from raise_plugin.commands.evaluate import collect_heuristics
    from tasks import get_task

    marker = tmp_path / "ran"
    heuristic = tmp_path / "h.py"
    heuristic.write_text(f"open({str(marker)!r}, 'w').write('x')\n\ndef priority(item, bins):\n    return -bins\n")
    chosen = collect_heuristics(get_task("obp"), [str(heuristic)], "none")
    assert [h.name for h in chosen] == ["h"] and not marker.exists()


@pytest.mark.parametrize("text, says", [
    ("def priority(item, bins)\n    return -bins\n", "syntax error at line 1"),
    ("def other(item, bins):\n    return -bins\ndef more(x):\n    return x\n", "expected one function"),
    ("def priority(item):\n    return -item\n", "must take the arguments (item, bins)"),
    ("async def priority(item, bins):\n    return -bins\n", "coroutine"),
    # each said "expected one function or one named 'priority' (found: none)" of a file that names one
    ("priority = lambda item, bins: -bins\n", "'priority' is assigned (priority = ...), not defined with def"),
    ("import numpy as np\npriority = np.negative\n", "write it as def priority(...): ..."),
])
def test_a_file_that_cannot_be_a_heuristic_is_one_line_before_any_work(text, says, tmp_path, capsys):
    heuristic = tmp_path / "bad.py"
    heuristic.write_text(text)
    code = main(["evaluate", str(heuristic), "--task", "obp", "--suite", "nominal", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
