"""The compiled evaluation path: a heuristic runs compiled only where it decides as its Python
function does; anything else runs in Python, counted, and the metrics never change."""
from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from raise_plugin.engine import Engine, ProcessExecutor, ProgramSpec, SandboxLimits
from raise_plugin.engine.compiled.compiler import WAITING, Compiler, _decision, probe_instances
from raise_plugin.engine.compiled.tally import CompiledTally
from raise_plugin.engine.jobs import Job, execute_job

from ..conftest import BEST_FIT

pytest.importorskip("numba")

FITTING = ("import numpy as np\n\ndef priority(item, bins):\n    gap = bins - item\n"
           "    return -gap + 0.5 * np.exp(-gap / 10.0)\n")
NO_NUMBA = ("import numpy as np\n\ndef priority(item, bins):\n"
            "    return -getattr(np, 'asarray')(bins)\n")  # numba compiles no getattr
RANDOM = "import numpy as np\n\ndef priority(item, bins):\n    return np.random.rand(len(bins))\n"
CTYPES = ("import ctypes\n\ndef priority(item, bins):\n    ctypes.CDLL(None).getpid()\n    return -bins\n")
JIT = SandboxLimits(timeout=120.0, memory_mb=1024, file_mb=1, output_mb=1, jit=True, jit_after=0)


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


# draw only where the probes (1000 items, fewer than 1500 bins) never reach: compiled, each drew from
# numba's own generators, which nothing seeds before an instance, so the job's run and its look-ahead
# check's copy drew otherwise, and the honest program was called a look-ahead
DRAWING_WHERE_PROBES_DO_NOT = {
    "np.random": ("import numpy as np\n\ndef priority(item, bins):\n    score = -(bins - item) * 1.0\n"
                  "    if bins.shape[0] > 1500:\n        score = score + np.random.random(bins.shape[0]) * 0.5\n"
                  "    return score\n"),
    "from numpy.random": ("from numpy.random import random\nimport numpy as np\n\ndef priority(item, bins):\n"
                          "    return -(bins - item) + (random() if bins.shape[0] > 1500 else 0.0)\n"),
}


@pytest.mark.parametrize("spelling", list(DRAWING_WHERE_PROBES_DO_NOT))
def test_a_program_whose_compiled_code_draws_random_numbers_stays_in_python(task, spelling):
    verdict = Compiler().verdict(task, ProgramSpec(code=DRAWING_WHERE_PROBES_DO_NOT[spelling]))
    assert not verdict.compiled
    assert verdict.reason.startswith("draws from the global random state")


ESCAPES = {  # each compiled and decided as its Python function on the probes, so each ran compiled, unchecked
    "numba's object mode (objmode)": (
        "import builtins\nimport numba\nimport numpy as np\n\n"
        "def _python(item, bins):\n    return -(bins - item) * 1.0\n\nbuiltins._python_priority = _python\n\n"
        "def priority(item, bins):\n    with numba.objmode(out='float64[:]'):\n"
        "        out = _python_priority(item, bins)\n    return out\n"),
    "a C function pointer (ctypes, cffi)": (
        "import ctypes\nimport numpy as np\n\n_labs = ctypes.CDLL(None).labs\n_labs.restype = ctypes.c_long\n"
        "_labs.argtypes = [ctypes.c_long]\n\ndef priority(item, bins):\n    return -(bins - item) * _labs(-1)\n"),
    "another compiled function": (
        "import numba\nimport numpy as np\n\n_gap = numba.njit(lambda bins, item: bins - item)\n\n"
        "def priority(item, bins):\n    return -_gap(bins, item)\n"),
}


@pytest.mark.parametrize("what", list(ESCAPES))
def test_a_program_reaching_past_its_arguments_when_compiled_stays_in_python(task, what):
    # compiled instances are not checked for look-ahead: object mode ran a look-ahead compiled, unchecked
    verdict = Compiler().verdict(task, ProgramSpec(code=ESCAPES[what]))
    assert not verdict.compiled
    assert verdict.reason == f"uses {what}, which runs code the look-ahead check cannot see compiled"
    # the same without it compiles (the program is otherwise one numba takes)
    assert Compiler().verdict(task, ProgramSpec(code=FITTING)).compiled


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


SAMPLER_STYLE = ("import numpy as np\n\ndef priority(item, bins):\n"
                 "    bins = np.asarray(bins, dtype=float)\n    item = float(item)\n"
                 "    cap = max(float(np.max(bins, initial=0.0)), 1e-09)\n    gap = (bins - item) / cap\n"
                 "    score = np.zeros(bins.shape[0])\n    score += -1.0 * (gap)\n"
                 "    score += 0.3 * (gap < 1e-09)\n"
                 "    return np.nan_to_num(score, nan=-1e9, posinf=1e9, neginf=-1e9)\n")
OWN_FLOAT = ("import numpy as np\n\nfloat = np.float32\n\ndef priority(item, bins):\n"
             "    return -np.asarray(bins, dtype=float)\n")  # its own float: numba is not told otherwise


def test_the_offline_samplers_spelling_compiles_and_decides_as_python(task, small_instances):
    verdict = Compiler().verdict(task, ProgramSpec(code=SAMPLER_STYLE))
    assert verdict.compiled, verdict.reason
    compiled = execute_job(_job(SAMPLER_STYLE, 3), small_instances, compiler=Compiler())
    assert compiled.compiled is True
    assert compiled.metrics == execute_job(_job(SAMPLER_STYLE, 3), small_instances).metrics


def test_the_python_path_keeps_pythons_float_and_a_programs_own_float_is_kept(task):
    spec = ProgramSpec(code=SAMPLER_STYLE)
    Compiler().verdict(task, spec)
    assert "float" not in spec.resolve(task).__globals__  # the copy that runs in Python is untouched
    own = Compiler().verdict(task, ProgramSpec(code=OWN_FLOAT))
    assert own.compiled and own.function.py_func.__globals__["float"] is np.float32


@pytest.mark.parametrize("values, initial", [
    (np.array([3, 9, 4]), 0.0), (np.array([3, 9, 4]), 7.5), (np.array([], dtype=np.int64), 7.5),
    (np.array([1.5, -2.0]), 0), (np.array([1.0, np.nan, 5.0]), 0.0), (np.array([1.0, 2.0]), np.nan),
    (np.array([[1.0, 8.0], [3.0, -4.0]]), 2.0), (np.array([True, False]), 0)])
def test_numba_reads_max_and_min_with_initial_as_numpy_does(values, initial):
    import numba
    from raise_plugin.engine.compiled.compiler import _numpy_reductions

    _numpy_reductions()
    for fn in (np.max, np.amax, np.min, np.amin):
        compiled = numba.njit(lambda a, x, fn=fn: fn(a, initial=x))
        expected, got = fn(values, initial=initial), compiled(values, initial)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        assert np.array_equal(got, expected, equal_nan=True), (fn.__name__, values, initial)


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


def test_a_program_is_compiled_once_its_evaluations_in_python_have_taken_long_enough(task, small_instances):
    python = execute_job(_job(SAMPLER_STYLE, 3), small_instances)
    never = Compiler(after=1e9)
    waiting = execute_job(_job(SAMPLER_STYLE, 3), small_instances, compiler=never)
    assert waiting.compiled is False and waiting.fallback.startswith(WAITING)
    assert waiting.metrics == python.metrics
    soon = Compiler(after=1e-9)  # compiled after the first instance: the other two run compiled
    switched = execute_job(_job(SAMPLER_STYLE, 3), small_instances, compiler=soon)
    assert switched.compiled is True and switched.metrics == python.metrics
    assert soon.ready(task, ProgramSpec(code=SAMPLER_STYLE)) is soon.verdict(task, ProgramSpec(code=SAMPLER_STYLE))


def test_the_tally_counts_programs_not_evaluated_long_enough_to_compile():
    from raise_plugin.engine.results import EvalResult

    tally = CompiledTally()
    wait = EvalResult((1.0,), ("",), compiled=False, fallback=f"{WAITING}: 0.10 s of Python in this worker")
    ok = EvalResult((1.0,), ("",), compiled=True)
    tally.record(_job("a", 1), wait)
    tally.record(_job("b", 1), wait)
    tally.record(_job("b", 1), ok)  # compiled in a later job, or in another worker
    tally.record(_job("b", 1), wait)
    assert (tally.programs_compiled, tally.programs_python, tally.programs_waiting) == (1, 0, 1)
    assert tally.line() == "1 programs compiled, 0 on Python, 1 not evaluated long enough to compile"


def test_the_tally_says_a_program_that_failed_failed_not_that_it_stayed_on_python_for_no_reason():
    """A program that raised on its first instance was "on Python" for an empty reason: "0 programs
    compiled, 1 on Python (1 )"."""
    from raise_plugin.engine.results import EvalResult, FailureKind

    tally = CompiledTally()
    failed = EvalResult.failed(1, FailureKind.HEURISTIC, "priority raised ValueError: no")
    tally.record(_job("a", 1), dataclasses.replace(failed, compiled=False))
    assert tally.line() == "0 programs compiled, 0 on Python, 1 failed before running compiled"
    wait = EvalResult((1.0,), ("",), compiled=False, fallback=f"{WAITING}: 0.10 s of Python in this worker")
    tally.record(_job("a", 1), wait)  # it ran, in Python, in a later job: counted once, as waiting
    assert tally.line() == "0 programs compiled, 0 on Python, 1 not evaluated long enough to compile"
    tally.record(_job("a", 1), EvalResult((1.0,), ("",), compiled=True))  # compiled in a later job: compiled
    assert tally.line() == "1 programs compiled, 0 on Python"


def test_in_a_sandboxed_worker_numba_compiles_but_a_program_still_cannot_use_ctypes(small_instances):
    with ProcessExecutor(1, JIT) as pool:
        engine = Engine("obp", pool, limits=JIT)
        compiled = engine.evaluate(FITTING, small_instances)
        refused = engine.evaluate(CTYPES, small_instances)
        assert compiled.valid and compiled.compiled is True, compiled
        assert not refused.valid and "ctypes" in refused.reason
        assert engine.compiled.programs_compiled == 1


@pytest.mark.parametrize("code", [FITTING, SAMPLER_STYLE], ids=["exp", "sampler"])
def test_an_honest_program_run_compiled_passes_its_look_ahead_check_run_compiled(code, small_instances):
    """Every instance run compiled is checked for look-ahead on a copy run compiled (its process's
    word that it ran so is no escape: tests/engine/judge): an honest program, checked on every job
    of one instance each, stays valid, compiled, and scores as in Python."""
    checked = SandboxLimits(timeout=120.0, memory_mb=1024, file_mb=1, output_mb=1, jit=True, jit_after=0,
                            foresight=1.0)
    with ProcessExecutor(1, checked) as pool:
        engine = Engine("obp", pool, limits=checked)
        results = [engine.evaluate(code, [instance]) for instance in small_instances]
    python = [execute_job(_job(code, 1), [instance]).metrics for instance in small_instances]
    assert all(r.valid and r.compiled is True and not r.unchecked for r in results), results
    assert [r.metrics for r in results] == python


# decides otherwise compiled than in Python, and only where the probes (1000 items, fewer than 1500
# bins) never reach: on a nominal instance of 5000 items
PATH_BOUND = ("import numpy as np\n\ndef priority(item, bins):\n    n = bins.shape[0]\n    gap = bins - item\n"
              "    if n > 1500 and (n ** 25) % 3 == 0:  # Python's integers never wrap; compiled, int64's do\n"
              "        return gap\n    return -gap\n")


def test_the_look_ahead_check_runs_the_copy_on_the_path_the_instance_ran(task):
    """A program compiled decides, on an instance its probes did not reach, otherwise than in
    Python: its check's copy, run compiled too, decides as the instance did, and the program is
    valid; a copy run in Python would have called it a look-ahead."""
    checked = SandboxLimits(timeout=120.0, memory_mb=1024, file_mb=1, output_mb=1, jit=True, jit_after=0,
                            foresight=1.0)
    instance = task.nominal_instances()[0]
    namespace: dict = {}
    exec(PATH_BOUND, namespace)
    with ProcessExecutor(1, checked) as pool:
        result = Engine("obp", pool, limits=checked).evaluate(PATH_BOUND, [instance])
    assert result.valid and result.compiled is True, result
    assert result.metrics[0] != task.evaluate(namespace["priority"], instance)  # the paths decide apart here
