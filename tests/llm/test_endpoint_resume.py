"""A paid run against a real endpoint: killed (kill -9) mid-request, resumed to a cap, resumed to its
end; the ledger counts exactly the requests the endpoint received, and the run's journal of
LLM calls replays it to the same samples."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from raise_plugin.cli import main
from raise_plugin.rundir.files import read_jsonl

FLAGS = ["--task", "ovrp", "--robust", "--tau", "1", "--inner-population", "4", "--inner-generations", "2",
         "--budget", "14", "--pop-size", "4", "--nominal", "1", "--seed", "0", "--no-progress",
         "--no-validation-trace", "--no-host-profiler"]


def sent(out: Path) -> int:
    return sum(e["e"] == "sent" for e in read_jsonl(out / "llm_requests.jsonl"))


def test_a_killed_capped_and_resumed_paid_run_counts_every_request_and_replays(tmp_path, monkeypatch):
    from llm_chat_server import ChatServer
    from raise_plugin.llm import OfflineSampler

    model = OfflineSampler(seed=0, task="ovrp")
    out = tmp_path / "run"
    with ChatServer(answer=lambda prompt: model.draw_sample(prompt)) as server:
        server.script("ok", "500", "ok", "prose")  # a retry and an unusable answer among them
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
               "PYTHONPATH": str(Path(__file__).parents[2])}
        child = subprocess.Popen([sys.executable, "-m", "raise_plugin.cli", "run", *FLAGS, "--llm", "openai:m",
                                  "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server.on_request = lambda n: n == 9 and os.kill(child.pid, signal.SIGKILL)  # mid-request
        assert child.wait(timeout=300) == -signal.SIGKILL
        server.on_request = None
        assert len(server.requests) == 9 and sent(out) == 9  # the request under way is counted

        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        assert main(["resume", str(out), "--max-llm-calls", "12", "--no-progress"]) == 0
        assert len(server.requests) == 12 and sent(out) == 12  # the cap holds across the kill
        summary = json.loads((out / "summary.json").read_text())
        assert "cap of 12 LLM requests" in summary["stopped"]
        assert main(["resume", str(out), "--max-llm-calls", "100", "--no-progress"]) == 0
        received = len(server.requests)
    summary = json.loads((out / "summary.json").read_text())
    usage = json.loads((out / "llm_usage.json").read_text())
    assert summary["finished"] and summary["samples"] == 14
    assert usage["total"]["requests"] == received == sent(out)
    assert usage["failures_by_kind"]["interrupted"] == 1 and usage["failures_by_kind"]["http_500"] == 1
    assert usage["total"]["unusable"] == 1

    replayed = tmp_path / "replayed"
    assert main(["run", *FLAGS, "--llm", f"replay:{out / 'llm_calls.jsonl'}", "--out", str(replayed)]) == 0
    ids = [(s["sample"], s["program_id"], s["score"]) for s in read_jsonl(out / "samples.jsonl")]
    assert [(s["sample"], s["program_id"], s["score"]) for s in read_jsonl(replayed / "samples.jsonl")] == ids
    assert read_jsonl(replayed / "population.jsonl") == read_jsonl(out / "population.jsonl")
