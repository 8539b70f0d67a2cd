"""The memory cap bounds what a program uses, never what the machine's libraries reserve.

On a 16-core machine every program failed the cap (``MemoryError`` allocating 39 KiB): the cap
was address space (RLIMIT_AS = size + budget), and address space is also what libraries reserve
without using it, more of it the more cores (glibc keeps up to eight malloc arenas per core, each
reserving 64 MiB, for the threads that allocate; thread pools' stacks). These tests recreate those
conditions on a small machine: reservations made after the cap, and many threads with arenas of
their own in the process the workers are forked from."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux resource limits")


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=240, env={**os.environ, **env})


RESERVE_THEN_ALLOCATE = """
    import mmap, resource
    import numpy as np
    from raise_plugin.engine.sandbox.oslimits import address_space_bytes, cap_memory
    {cap}
    # what 64 threads' malloc arenas reserve: 4 GiB of address space, never written
    reserved = mmap.mmap(-1, 4 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)  # PROT_NONE
    np.zeros(5000)
    try:
        np.ones(300 << 17)  # 300 MiB, written
    except MemoryError:
        print("capped")
    else:
        print("not capped")
"""


def test_address_space_reserved_after_the_cap_fails_no_allocation_and_the_budget_holds():
    done = _python(RESERVE_THEN_ALLOCATE.format(cap="cap_memory(256)"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["capped"]


def test_the_address_space_cap_it_replaced_fails_under_the_same_reservations():
    """The cause, shown: with RLIMIT_AS = size + budget the reservation itself is refused."""
    old = ("resource.setrlimit(resource.RLIMIT_AS, (address_space_bytes() + (256 << 20),) * 2)")
    done = _python(RESERVE_THEN_ALLOCATE.format(cap=old))
    assert done.returncode != 0 and ("OSError" in done.stderr or "MemoryError" in done.stderr), done.stderr[-2000:]


MANY_ARENAS = """
    import threading
    import numpy as np
    from raise_plugin.engine import Engine, ProgramSpec, SandboxLimits
    from tasks import get_task

    go = threading.Event()
    def hold():
        block = bytearray(1 << 20)  # a thread that allocates gets a malloc arena of its own
        go.wait()
    threading.stack_size(256 << 10)
    threads = [threading.Thread(target=hold) for _ in range(96)]
    for t in threads:
        t.start()
    task = get_task("obp")
    instance = task.nominal_instances()[0]
    alone = task.evaluate(task.baselines["BestFit"], instance)
    COUNT = ("import numpy as np\\n\\ndef priority(item, bins):\\n"
             "    np.ones((300, 300)) @ np.ones((300, 300))\\n"
             "    import os\\n"
             "    raise ValueError('threads=%d' % (os.stat('/proc/self/task').st_nlink - 2))\\n")
    try:
        for method in ("fork", "server"):
            limits = SandboxLimits(start_method=method, memory_mb=256, foresight=0.0)
            with Engine("obp", "process:1", limits=limits) as engine:
                result = engine.evaluate(ProgramSpec(baseline="BestFit"), [instance])
                counted = engine.evaluate(COUNT, [instance])
            print(method, result.valid, result.metrics[0] == alone, result.reason, "|", counted.reason)
    finally:
        go.set()
"""


def test_best_fit_evaluates_exactly_when_the_engine_holds_many_threads_and_arenas():
    """96 threads, each with an arena of its own (MALLOC_ARENA_MAX=128) and a pool of BLAS threads
    as large as the machine allows, alive in the engine when its workers are forked (``fork``) or
    beside the clean fork server (``server``), with a 256 MiB budget: best fit scores exactly as in
    the engine's process, and a program's process runs one thread, even after a matrix product."""
    done = _python(MANY_ARENAS, MALLOC_ARENA_MAX="128", OPENBLAS_NUM_THREADS=str(os.cpu_count() or 2))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    for method in ("fork", "server"):
        line = next(line for line in lines if line.startswith(method + " "))
        assert line.startswith(f"{method} True True"), done.stdout
        assert line.endswith("threads=1"), done.stdout


HELD = """
    import numpy as np
    from raise_plugin.engine.sandbox.oslimits import held_against
    kept = np.ones(50 << 17)  # 50 MiB, written
    def status(field):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))
    for which, field in (("RLIMIT_DATA", "VmData"), ("RLIMIT_AS", "VmSize")):
        before = status(field)
        held = held_against(which)
        print(which, held == before == status(field))
"""


def test_what_a_process_holds_is_measured_against_its_limit_as_proc_says_to_the_byte():
    """Where ``/proc`` can be read, the bisection against the limit finds what it says: VmData
    against RLIMIT_DATA, VmSize against RLIMIT_AS, and leaves the soft limit as it was."""
    done = _python(HELD)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["RLIMIT_DATA", "True", "RLIMIT_AS", "True"]


CONFINED = """
    import os, resource, sys, tempfile
    import numpy as np
    from raise_plugin.engine.sandbox import cap_memory
    from raise_plugin.engine.sandbox.confine import confine
    confine(tempfile.mkdtemp())  # as a worker is; the processes that run programs are forked from it
    if os.fork() == 0:
        try:
            open("/proc/self/status").read()  # the worker's own /proc, not this process's, is readable
        except PermissionError:
            print("proc unreadable")
        cap_memory(256)
        print("data capped", resource.getrlimit(resource.RLIMIT_DATA)[0] != resource.RLIM_INFINITY)
        np.ones(100 << 17)  # 100 MiB, written: within the budget
        try:
            np.ones(300 << 17)  # 300 MiB, written: past it
        except MemoryError:
            print("capped")
        else:
            print("not capped")
        sys.stdout.flush()
        os._exit(0)
    os.wait()
"""


def test_a_process_that_may_not_read_proc_is_capped_all_the_same():
    """A program's process is forked from a worker confined by Landlock, which may read its own
    ``/proc`` only: the program's process may not read ``/proc/self/status``. The cap once needed
    it, and every program ran uncapped (500 MB written under ``--memory-mb 100`` scored as fine).
    The cap now measures what the process holds against the limit itself."""
    from raise_plugin.engine.sandbox.confine import landlock_abi

    if not landlock_abi():
        pytest.skip("no Landlock in this kernel")
    done = _python(CONFINED)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == ["proc unreadable", "data capped True", "capped"], done.stdout
