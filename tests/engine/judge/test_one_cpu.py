"""A look-ahead check holds its two processes on one CPU for its length (``judge.one_cpu``): the
worker's thread on the CPU it runs on, the program's process started meanwhile on the same one,
and the worker's CPUs given back after it; where only one CPU is allowed, nothing changes."""
from __future__ import annotations

import os
import threading

import pytest

from raise_plugin.engine.judge.one_cpu import current_cpu, on_one_cpu
from raise_plugin.engine.judge.spawner import ProgramProcesses

from ..conftest import ROOMY

ALLOWED = os.sched_getaffinity(0)
several = pytest.mark.skipif(len(ALLOWED) < 2, reason="this process may run on one CPU only")


class Processes:
    cpu = None


def test_the_cpu_read_is_one_this_thread_may_run_on():
    assert current_cpu() in ALLOWED


@several
def test_the_thread_is_held_on_its_cpu_for_the_check_and_let_go_after_it():
    processes = Processes()
    with on_one_cpu(processes):
        held = os.sched_getaffinity(0)
        assert len(held) == 1 and processes.cpu in held and current_cpu() == processes.cpu
    assert os.sched_getaffinity(0) == ALLOWED and processes.cpu is None


@several
def test_it_is_let_go_when_the_check_raises_and_the_worker_s_other_threads_are_not_held():
    processes, seen, asked, answered = Processes(), [], threading.Event(), threading.Event()

    def other():
        asked.wait()
        seen.append(os.sched_getaffinity(0))
        answered.set()

    thread = threading.Thread(target=other)
    thread.start()
    with pytest.raises(RuntimeError):
        with on_one_cpu(processes):
            asked.set()
            answered.wait()
            raise RuntimeError("the check failed")
    thread.join()
    assert seen == [ALLOWED]
    assert os.sched_getaffinity(0) == ALLOWED and processes.cpu is None


def test_nothing_is_held_where_one_cpu_is_allowed():
    one = {min(ALLOWED)}
    os.sched_setaffinity(0, one)
    try:
        processes = Processes()
        with on_one_cpu(processes):
            assert processes.cpu is None and os.sched_getaffinity(0) == one
    finally:
        os.sched_setaffinity(0, ALLOWED)


@several
def test_a_program_process_started_during_the_check_runs_on_the_check_s_cpu(tmp_path):
    processes = ProgramProcesses(ROOMY, str(tmp_path))
    try:
        with on_one_cpu(processes):
            during = processes.start()
            cpu = processes.cpu
        after = processes.start()
        try:
            assert os.sched_getaffinity(during.pid) == {cpu}
            assert os.sched_getaffinity(after.pid) == ALLOWED
        finally:
            during.close()
            after.close()
    finally:
        processes.close()
