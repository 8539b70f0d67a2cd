"""A run stopped at a cap, then resumed, makes the same prompts, samples and populations as the same
run uninterrupted; the journal of LLM calls of a run killed and resumed replays it exactly. (Kills at
every write, resumed to the uninterrupted run: test_run_faults.py.)"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from raise_plugin.rundir.files import read_jsonl
from raise_plugin.runner import resume_run, start_run

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("killed_run", HERE / "killed_run.py")
killed_run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(killed_run)


def record(out: Path) -> dict:
    """What must not differ between an uninterrupted and a resumed run."""
    samples = read_jsonl(out / "samples.jsonl")
    index = read_jsonl(out / "instances" / "index.jsonl")
    return {
        "samples": [(s["sample"], s["program_id"], s["score"], s["instance_set"]) for s in samples],
        "prompts": [e["hash"] for e in read_jsonl(out / "llm_calls.jsonl")],
        "populations": read_jsonl(out / "population.jsonl"),
        "instances": [r["instance_id"] for r in index if r.get("kind") == "instance"],
        "scores": read_jsonl(out / "scores.jsonl"),
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "run"
    start_run(killed_run.config(str(out))).run()
    return record(out)


def kill(out: Path, point: str, method: str = "eoh") -> int:
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1])}
    done = subprocess.run([sys.executable, str(HERE / "killed_run.py"), str(out), point, method], env=env,
                          capture_output=True, text=True, timeout=300)
    return done.returncode


def test_a_run_stopped_at_caps_and_resumed_is_the_uninterrupted_run(tmp_path, uninterrupted):
    out = tmp_path / "run"
    method = start_run(killed_run.config(str(out), max_llm_calls=7))
    method.run()
    assert method.samples == 7 and "cap of 7 LLM requests" in method.stop_reason
    again = resume_run(out)  # the recorded cap still holds: it stops before any request
    again.run()
    assert again.samples == 7 and again.stop_reason is not None
    resume_run(out, max_llm_calls=13).run()
    resume_run(out, max_llm_calls=100).run()
    assert record(out) == uninterrupted
    usage = json.loads((out / "llm_usage.json").read_text())
    assert usage["total"]["requests"] == 20  # nothing asked twice


def test_the_journal_of_a_resumed_run_replays_it(tmp_path, uninterrupted):
    out = tmp_path / "run"
    assert kill(out, "sample:9") == -signal.SIGKILL
    resume_run(out).run()
    replayed = tmp_path / "replayed"
    start_run(killed_run.config(str(replayed), llm=f"replay:{out / 'llm_calls.jsonl'}")).run()
    assert record(replayed)["samples"] == record(out)["samples"] == uninterrupted["samples"]


@pytest.mark.parametrize("method", ["eoh", "gp"])
def test_a_run_killed_between_a_refresh_and_its_checkpoint_resumes_to_the_uninterrupted_run(tmp_path, method,
                                                                                           uninterrupted):
    """The refresh made again on resume wrote its re-scores to scores.jsonl a second time."""
    if method != "eoh":
        start_run(killed_run.config(str(tmp_path / "whole"), method=method)).run()
        uninterrupted = record(tmp_path / "whole")
    out = tmp_path / "run"
    assert kill(out, "generation:2", method) == -signal.SIGKILL
    resume_run(out).run()
    assert record(out) == uninterrupted
