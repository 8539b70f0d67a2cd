"""EngineEvaluator: the host's SecureEvaluator interface on the engine, inside a host method."""
from __future__ import annotations

import numpy as np
import pytest
from llm4ad.base import Evaluation

from raise_plugin.engine import EngineEvaluator, FailureKind, InstanceSet, use_engine
from raise_plugin.programs import compile_priority

from .conftest import BEST_FIT


@pytest.fixture()
def evaluation(task, small_instances):
    return task.evaluation(list(small_instances), timeout_seconds=5)


def direct_score(evaluation, code):
    return evaluation.evaluate_program(code, compile_priority(code, None))


def test_scores_equal_the_host_evaluation(pool, evaluation):
    ev = EngineEvaluator(evaluation, pool)
    score, seconds = ev.evaluate_program_record_time(BEST_FIT)
    assert score == direct_score(evaluation, BEST_FIT) and seconds > 0
    assert ev.last_result.valid and len(ev.last_result.metrics) == len(evaluation.instances)


def test_aggregation_of_the_evaluation_is_used(pool, task, small_instances):
    worst = task.evaluation(list(small_instances), aggregation="min")
    ev = EngineEvaluator(worst, pool)
    assert ev.evaluate_program(BEST_FIT) == pytest.approx(-max(ev.last_result.metrics))


def test_a_failure_gives_none_and_keeps_the_reason(pool, evaluation):
    ev = EngineEvaluator(evaluation, pool)
    assert ev.evaluate_program("def priority(item, bins):\n    return None\n") is None
    assert ev.last_result.kind == FailureKind.HEURISTIC and "shape" in ev.last_error
    assert evaluation.last_error == ev.last_error and ev.failures == {FailureKind.HEURISTIC: 1}
    assert ev.evaluate_program("def priority(item, bins):\n    while True: pass\n", ) is None
    assert ev.last_result.kind == FailureKind.TIMEOUT
    assert ev.evaluate_program("not python at all (") is None


def test_replaced_and_edited_instance_lists_are_noticed(pool, task, evaluation, small_instances):
    ev = EngineEvaluator(evaluation, pool)
    first = ev.evaluate_program(BEST_FIT)
    version = ev.current_instances().version
    evaluation.instances = list(small_instances[:1])  # the robust wrapper replaces the list
    assert ev.current_instances().version == version + 1
    assert ev.evaluate_program(BEST_FIT) == direct_score(evaluation, BEST_FIT) != first
    extra = task.make_instance(np.arange(1, 40), None, capacity=60)
    evaluation.instances.append(extra)  # or edits it in place
    assert ev.evaluate_program(BEST_FIT) == direct_score(evaluation, BEST_FIT)
    assert ev.current_instances().version == version + 2
    assert len(ev.last_result.metrics) == 2


class SquareEvaluation(Evaluation):
    """A host evaluation that is not a task: the engine runs its own evaluate_program."""

    def __init__(self):
        super().__init__(template_program="def f(x: float) -> float:\n    return x\n", timeout_seconds=2)

    def evaluate_program(self, program_str, callable_func, **kwargs):
        return float(callable_func(3.0))


def test_any_host_evaluation_runs_sandboxed(pool):
    ev = EngineEvaluator(SquareEvaluation(), pool)
    assert not ev.is_task
    assert ev.evaluate_program("def f(x: float) -> float:\n    return x * x\n") == 9.0
    assert ev.evaluate_program("def f(x: float) -> float:\n    while True: pass\n") is None
    assert ev.last_result.kind == FailureKind.TIMEOUT


class ScriptedLLM:
    """Answers every EoH prompt with a BestFit variant (no network)."""

    debug_mode = False

    def __init__(self):
        self.calls = 0

    def draw_sample(self, prompt, *args, **kwargs):
        self.calls += 1
        return ("{Prefer bins whose residual is near a target slack.}\n```python\nimport numpy as np\n\n"
                "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
                f"    return -np.abs(bins - item - {self.calls % 7})\n```")


def test_use_engine_plugs_into_eoh(pool, evaluation):
    from llm4ad.method.eoh import EoH
    llm = ScriptedLLM()
    method = EoH(llm, evaluation, profiler=None, max_sample_nums=6, max_generations=2, pop_size=2,
                 num_samplers=1, num_evaluators=2)
    engine_evaluator = use_engine(method, executor=pool)
    assert method._evaluator is engine_evaluator and engine_evaluator._evaluator is evaluation
    method.run()
    assert engine_evaluator.evaluations >= 2 and engine_evaluator.failures == {}
    members = [f for f in method._population.population if np.isfinite(f.score)]
    assert members
    for f in members:
        code = str(f)
        assert f.score == direct_score(evaluation, "import numpy as np\n\n" + code)


def test_instance_set_versions():
    s = InstanceSet([1, 2])
    t = s.next_version([1, 2, 3])
    assert t.id == s.id and t.version == s.version + 1 and len(t) == 3
