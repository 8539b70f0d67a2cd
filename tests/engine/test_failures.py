"""Why an evaluation failed, said in one line: the kind and the reason of an exception."""
from __future__ import annotations

import pytest

from raise_plugin.engine import Engine, FailureKind, ProgramSpec
from raise_plugin.engine.failures import classify
from raise_plugin.engine.jobs import Job, execute_job

from .conftest import ROOMY, SHORT


@pytest.fixture
def engine(pool):
    return Engine("obp", pool, limits=SHORT)


@pytest.mark.parametrize("exc, said", [
    (GeneratorExit(), "the program raised GeneratorExit"),  # was the task's failure: 'evaluation raised GeneratorExit:'
    (KeyboardInterrupt(), "the program raised KeyboardInterrupt"),
    (SystemExit(3), "the program raised SystemExit: 3"),
    (type("Stop", (BaseException,), {})("now"), "the program raised Stop: now"),
])
def test_what_only_a_program_raises_is_the_programs_failure(exc, said):
    assert classify(exc) == (FailureKind.HEURISTIC, said)


def test_an_exception_without_a_message_leaves_no_colon():
    assert classify(KeyError()) == (FailureKind.ERROR, "evaluation raised KeyError")
    assert classify(KeyError("x")) == (FailureKind.ERROR, "evaluation raised KeyError: 'x'")


@pytest.mark.parametrize("raised", ["SystemExit(0)", "GeneratorExit", "KeyboardInterrupt"])
def test_module_code_that_exits_fails_the_program_in_process_as_in_its_own_process(engine, small_instances, raised):
    """A program whose module code raises fails as a program (kind program, its instances skipped),
    evaluated in the caller's process as in the judge's program process (it was a heuristic's failure)."""
    code = f"raise {raised}\n\ndef priority(item, bins):\n    return -bins\n"
    in_process = execute_job(Job("obp", ProgramSpec(code=code), "local", 0, (0, 1)), small_instances)
    judged = engine.evaluate(code, small_instances[:2], split=1, timeout=ROOMY.timeout)
    assert in_process.kind == judged.kind == FailureKind.PROGRAM, (in_process, judged)
    assert in_process.reason == judged.reason
