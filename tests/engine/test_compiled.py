"""The compiled evaluation path: a heuristic runs compiled only where it decides as its Python
function does; anything else runs in Python, counted, and the metrics never change."""
from __future__ import annotations

import random

import numpy as np
import pytest

from raise_plugin.engine import Engine, ProcessExecutor, ProgramSpec, SandboxLimits
from raise_plugin.engine.compiled import CompiledTally, Compiler, _decision, probe_instances
from raise_plugin.engine.jobs import Job, execute_job

from .conftest import BEST_FIT

pytest.importorskip("numba")

FITTING = ("import numpy as np\n\ndef priority(item, bins):\n    gap = bins - item\n"
           "    return -gap + 0.5 * np.exp(-gap / 10.0)\n")
NO_NUMBA = ("import numpy as np\n\ndef priority(item, bins):\n"
            "    return -np.asarray(bins, dtype=float)\n")  # numba takes no Python type as a dtype
RANDOM = "import numpy as np\n\ndef priority(item, bins):\n    return np.random.rand(len(bins))\n"
CTYPES = ("import ctypes\n\ndef priority(item, bins):\n    ctypes.CDLL(None).getpid()\n    return -bins\n")
JIT = SandboxLimits(timeout=120.0, memory_mb=1024, file_mb=1, output_mb=1, jit=True)


def _job(code: str, count: int) -> Job:
    return Job("obp", ProgramSpec(code=code), "local", 0, tuple(range(count)))


def test_a_program_numba_compiles_and_that_decides_alike_runs_compiled(task, small_instances):
    verdict = Compiler().verdict(task, ProgramSpec(code=FITTING))
    assert verdict.compiled, verdict.reason
    python = execute_job(_job(FITTING, 3), small_instances)
    compiled = execute_job(_job(FITTING, 3), small_instances, compiler=Compiler())
    assert compiled.compiled is True and compiled.fallback == ""
    assert compiled.metrics == python.metrics and python.compiled is None


def test_a_program_numba_cannot_compile_runs_in_python_with_the_reason(task, small_instances):
    result = execute_job(_job(NO_NUMBA, 3), small_instances, compiler=Compiler())
    assert result.valid and result.compiled is False
    assert result.fallback.startswith("does not compile")
    assert result.metrics == execute_job(_job(NO_NUMBA, 3), small_instances).metrics


def test_a_program_drawing_random_numbers_stays_in_python_and_the_draws_are_undone(task):
    np.random.seed(3)
    random.seed(3)
    before = np.random.get_state()[1].copy(), random.getstate()
    verdict = Compiler().verdict(task, ProgramSpec(code=RANDOM))
    assert not verdict.compiled
    assert np.array_equal(np.random.get_state()[1], before[0]) and random.getstate() == before[1]


def test_a_verdict_is_kept_per_program(task):
    compiler = Compiler()
    first = compiler.verdict(task, ProgramSpec(code=BEST_FIT))
    assert compiler.verdict(task, ProgramSpec(code=BEST_FIT)) is first


def test_an_instance_the_compiled_function_fails_on_is_evaluated_in_python(task):
    # the probes hand over int64 items; float items are a signature never checked, so refused
    rng = np.random.default_rng(5)
    instance = task.make_instance(rng.integers(1, 100, size=30), rng, capacity=100)
    floats = {**instance, "items": np.asarray(instance["items"], dtype=float)}
    result = execute_job(_job(FITTING, 1), [floats], compiler=Compiler())
    assert result.valid and result.compiled is False
    assert result.fallback.startswith("fails on an instance compiled")
    assert result.metrics == execute_job(_job(FITTING, 1), [floats]).metrics


def test_the_decision_compared_is_the_simulators():
    assert _decision(np.array([1.0, 3.0, 3.0])) == _decision(np.array([1.0, 3.0 + 1e-15, 2.9]))
    assert _decision(np.array([1.0, 3.0])) != _decision(np.array([3.0, 1.0]))
    assert _decision(np.array([np.nan, 3.0])) != _decision(np.array([0.0, 3.0]))  # NaN is refused
    assert _decision(np.array([1, 2])) != _decision(np.array([1, 2, 3]))


def test_probe_instances_are_small_and_the_same_every_time(task):
    first, again = probe_instances(task), probe_instances(task)
    assert len(first) == 3
    assert all(task.instance_length(p) <= task.nominal_length for p in first)
    assert all(np.array_equal(a["items"], b["items"]) for a, b in zip(first, again))


def test_the_tally_counts_a_program_compiled_only_when_every_job_of_it_was():
    from raise_plugin.engine.results import EvalResult
    tally = CompiledTally()
    ok = EvalResult((1.0,), ("",), compiled=True)
    fell = EvalResult((1.0,), ("",), compiled=False, fallback="does not compile: TypingError")
    tally.record(_job("a", 1), ok)
    tally.record(_job("b", 1), ok)
    tally.record(_job("b", 1), fell)
    tally.record(_job("c", 1), EvalResult((1.0,), ("",)))  # not on the compiled path: not counted
    assert tally.as_dict()["programs_compiled"] == 1 and tally.programs_python == 1
    assert tally.reasons() == {"does not compile": 1}
    assert "1 programs compiled, 1 on Python (1 does not compile)" == tally.line()


def test_in_a_sandboxed_worker_numba_compiles_but_a_program_still_cannot_use_ctypes(small_instances):
    with ProcessExecutor(1, JIT) as pool:
        engine = Engine("obp", pool, limits=JIT)
        compiled = engine.evaluate(FITTING, small_instances)
        refused = engine.evaluate(CTYPES, small_instances)
        assert compiled.valid and compiled.compiled is True, compiled
        assert not refused.valid and "ctypes" in refused.reason
        assert engine.compiled.programs_compiled == 1
