"""A worker's spawner loads a job's task (or a host evaluation's module) once, before it forks the
program's process, so each program's process finds it loaded rather than importing it again after
it is confined (a host task's modules cost about half a second there: matplotlib rebuilds its font
list where the sandbox hides its cache)."""
from __future__ import annotations

import os

from llm4ad.base import Evaluation

from raise_plugin.engine import EngineEvaluator, ProcessExecutor

from ..conftest import ROOMY

LOADED_BY = os.getpid()  # the process that imported this module


class WhereLoaded(Evaluation):
    """Scores 1 where this module was loaded before the program's process began (by the spawner
    it was forked from), 0 where that process had to import it itself."""

    def __init__(self):
        super().__init__(template_program="def f(x: float) -> float:\n    return x\n", timeout_seconds=30)

    def evaluate_program(self, program_str, callable_func, **kwargs):
        return float(LOADED_BY != os.getpid()) + float(callable_func(0.0))


def test_a_host_evaluations_module_is_loaded_before_the_programs_process_starts():
    with ProcessExecutor(1, ROOMY) as pool:
        ev = EngineEvaluator(WhereLoaded(), pool)
        scores = [ev.evaluate_program(f"def f(x: float) -> float:\n    return x + {k}\n") for k in range(3)]
    assert scores == [1.0, 2.0, 3.0], ev.last_result
