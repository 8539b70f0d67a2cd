"""A stop signal ends the requests under way as a cap does: no retry is sent after it and a back-off
it lands in ends at once; a request in flight ends as it ends (its answer, or its timeout). The
run then resumes against a healthy endpoint to its end, every request counted."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from raise_plugin.cli import main
from raise_plugin.llm import OfflineSampler
from raise_plugin.rundir.files import read_jsonl

FLAGS = ["--task", "ovrp", "--no-robust", "--budget", "4", "--pop-size", "4", "--nominal", "1", "--seed", "0",
         "--no-progress", "--no-validation-trace", "--no-host-profiler", "--llm", "openai:m"]


@pytest.mark.parametrize("behaviour, flags, signum", [
    ("429", [], signal.SIGINT),                            # lands in a back-off of 30 s (the server's Retry-After)
    ("hang", ["--llm-timeout", "3"], signal.SIGTERM)])     # lands in a request that times out 3 s later
def test_a_stop_signal_sends_no_retry_and_waits_out_no_back_off(tmp_path, monkeypatch, behaviour, flags, signum):
    from llm_chat_server import ChatServer

    model = OfflineSampler(seed=0, task="ovrp")
    out = tmp_path / "run"
    with ChatServer(answer=lambda prompt: model.draw_sample(prompt), retry_after="30") as server:
        server.default = behaviour
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
               "PYTHONPATH": str(Path(__file__).parents[2])}
        child = subprocess.Popen([sys.executable, "-m", "raise_plugin.cli", "run", *FLAGS, *flags, "--out", str(out)],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        signalled = []

        def stop_soon(n):
            if n == 1:
                signalled.append(time.monotonic() + 0.5)
                threading.Timer(0.5, os.kill, (child.pid, signum)).start()

        server.on_request = stop_soon
        _, err = child.communicate(timeout=120)
        seconds = time.monotonic() - signalled[0]
        received = len(server.requests)
        assert received == 1, err  # before: the retries went on after the signal (3 more, 45 s for the 429s)
        assert child.returncode == 128 + signum and seconds < (5 if behaviour == "429" else 8), (seconds, err)
        assert "Traceback" not in err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["stopped"].startswith(f"stopped by {signal.Signals(signum).name}")

        server.default = "ok"
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert main(["resume", str(out), "--no-progress"]) == 0
        received = len(server.requests)
    summary = json.loads((out / "summary.json").read_text())
    usage = json.loads((out / "llm_usage.json").read_text())
    assert summary["finished"] and summary["samples"] == 4
    journal = read_jsonl(out / "llm_requests.jsonl")
    assert usage["total"]["requests"] == received == sum(e["e"] == "sent" for e in journal)
