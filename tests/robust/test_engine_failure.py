"""The place programs run on fails during a run (a Dask cluster that lost its scheduler): the run stops,
saying so, as a failure of the engine, not as failures of its programs or of its LLM."""
from __future__ import annotations

import concurrent.futures as cf
import threading

from llm4ad.method.eoh import EoH
from robust_helpers import ScriptedLLM, small_obp_evaluation

from raise_plugin.engine import SerialExecutor
from raise_plugin.robust import robust


class GoneAfter:
    """Runs jobs on one sandboxed worker until ``jobs`` have run; every later job fails as a job on a
    cluster whose scheduler went away fails (its future raises)."""

    workers = 1

    def __init__(self, jobs: int):
        self._inner = SerialExecutor()
        self._left = jobs
        self._lock = threading.Lock()

    def submit_job(self, job, instance_set) -> cf.Future:
        with self._lock:
            self._left -= 1
            gone = self._left < 0
        if not gone:
            return self._inner.submit_job(job, instance_set)
        future: cf.Future = cf.Future()
        future.set_exception(ConnectionError("the scheduler went away"))
        return future

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        return self._inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, **_) -> None:
        self._inner.shutdown()


def test_a_place_that_fails_during_the_run_stops_it_as_the_engine_s_failure_not_the_llm_s():
    """It was each sample's failure, unseen: the run asked ten more answers, none of which could be
    evaluated, and stopped blaming the LLM ("10 LLM requests in a row gave no usable program")."""
    llm, place = ScriptedLLM(3, fail_every=0), GoneAfter(jobs=12)
    method = robust(EoH)(llm=llm, evaluation=small_obp_evaluation(count=2), max_sample_nums=40, pop_size=4,
                         max_generations=None, seed=1, executor=place)
    summary = method.run()
    assert summary["failure"] == (f"the engine running programs failed ({place}): "
                                  "ConnectionError: the scheduler went away; resume continues the run"), summary
    assert summary["stopped"] == summary["failure"] and not summary["finished"]
    assert 0 < summary["samples"] <= 12  # what ran before it went away is kept
    assert llm.calls <= summary["samples"] + 2  # the answer under way, not ten more
    errors = [r.error for r in method._book.records() if r.error]
    assert not any("scheduler" in e for e in errors), errors  # no program is charged with it
