"""No secret reaches generated code: programs evaluated through the engine's paths see no
API key, token or secret in their environment."""
from __future__ import annotations

import os

import pytest

from robust_helpers import ScriptedLLM
from raise_plugin.config import RunConfig
from raise_plugin.engine import EngineEvaluator, ProcessExecutor
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.runner import start_run
from tasks.common.suite import Dataset

from .conftest import ROOMY

SECRETS = {"OPENAI_API_KEY": "sk-never-for-programs", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "GITHUB_TOKEN": "ghp-x", "MY_SERVICE_SECRET": "s", "DEPLOY_KEY_PATH": "/k", "hf_token": "t"}

PROBE = ("import numpy as np\nimport os\n\n\ndef priority(item, bins):\n"
         "    seen = [k for k in os.environ\n"
         "            if any(w in k.upper() for w in ('KEY', 'TOKEN', 'SECRET', 'OPENAI'))]\n"
         "    if seen:\n        raise RuntimeError('the program sees ' + ','.join(sorted(seen)))\n"
         "    return -bins\n")


@pytest.fixture()
def secrets(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    yield
    assert os.environ["OPENAI_API_KEY"] == SECRETS["OPENAI_API_KEY"]  # the caller's environment is intact


def test_suite_evaluation_hides_secrets_from_programs(secrets, small_instances):
    rows = evaluate_suite("obp", [Heuristic("probe", code=PROBE)], [Dataset("small", {}, small_instances)],
                          executor="process:1", progress=False)
    assert all(r.valid for r in rows), rows[0].reason


def test_the_engine_evaluator_hides_secrets_from_programs(secrets, task, small_instances):
    with ProcessExecutor(1, ROOMY) as pool:
        evaluator = EngineEvaluator(task.evaluation(list(small_instances), timeout_seconds=30), pool)
        assert evaluator.evaluate_program(PROBE) is not None, evaluator.last_error


def test_a_robust_runs_evaluator_hides_secrets_from_programs(secrets, tmp_path):
    config = RunConfig(task="obp", budget=4, pop_size=2, tau=2, inner_population=2, inner_generations=1, nominal=1,
                       out=str(tmp_path / "run"), host_profiler=False)
    method = start_run(config, llm=ScriptedLLM(0))
    try:
        evaluator = method._evaluator
        assert evaluator._runner.engine is not None  # the default: the sandboxed engine
        assert evaluator.evaluate_program(PROBE) is not None, method._book.record(PROBE).error
    finally:
        method.recorder.close()


def test_the_probe_does_see_secrets_outside_the_sandbox(secrets, task, small_instances):
    from raise_plugin.programs import compile_priority
    from tasks.common.errors import HeuristicError

    with pytest.raises(HeuristicError, match="OPENAI_API_KEY"):
        task.evaluate(compile_priority(PROBE, None), small_instances[0])
