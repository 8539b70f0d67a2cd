"""The offline sampler on tasks declared through the adapter: a declared library gives real,
varied programs; without one, the generic path still gives valid, distinct ones."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import tasks
from raise_plugin.llm import OfflineSampler
from tasks import get_task, register_task
from tasks.knapsack import KnapsackTask

_bench_path = Path(__file__).resolve().parents[2] / "benchmarks" / "offline_sampler_quality.py"
_spec = importlib.util.spec_from_file_location("offline_sampler_quality", _bench_path)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

SAMPLES = 40


def stream(task_name: str, sampler_task: str | None):
    evaluation = get_task(task_name).evaluation(safe_evaluate=False)
    return bench.operator_stream(evaluation, OfflineSampler(seed=0, task=sampler_task), SAMPLES, seed=0, n_create=10)


@pytest.mark.parametrize("name", ["knapsack", "cvrp"])
@pytest.mark.parametrize("named", [True, False], ids=["task named", "by parameters"])
def test_a_declared_library_gives_valid_varied_programs_that_beat_the_seeds(name, named):
    done = stream(name, name if named else None)
    scores = [d["score"] for d in done if d["score"] is not None]
    assert len(scores) == SAMPLES
    assert len({d["program"] for d in done}) >= 0.9 * SAMPLES
    assert "score = np.zeros(n)" in done[0]["program"]      # the library's shape, not the template's
    best_baseline = max(get_task(name).evaluation().evaluate_program("", b) for b in get_task(name).baselines.values())
    assert max(scores) >= best_baseline


class PlainKnapsack(KnapsackTask):
    name = "knapsack_without_library"
    offline_library = None


def test_without_a_library_the_generic_path_gives_valid_distinct_programs(monkeypatch):
    monkeypatch.setattr(tasks, "_registered", {})
    register_task(PlainKnapsack)
    done = stream("knapsack_without_library", "knapsack_without_library")
    assert all(d["score"] is not None for d in done)
    assert len({d["program"] for d in done}) >= 0.9 * SAMPLES
    assert all("score = np.zeros(n)" not in d["program"] for d in done)  # varied template, not the library
