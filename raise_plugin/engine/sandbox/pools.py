"""One thread per pool for the numeric libraries of a worker and its program processes: the
parallelism is across processes. A pool of many threads, started in a program's process after
its memory cap, reserves address space the program never asked for (a stack and a malloc arena
of 64 MiB for each thread), and the kernel refuses a program's process any thread anyway."""
from __future__ import annotations

import os

from threadpoolctl import threadpool_limits

__all__ = ["ONE_THREAD", "one_thread_per_pool"]

# read by the libraries when they load: set in the environment of every process that starts an
# interpreter for the engine's workers (the clean fork server, ``spawn``)
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "BLIS_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}


def one_thread_per_pool() -> None:
    """Pools of one thread in this process, for the libraries loaded already (numpy's BLAS in a
    worker forked from a process that imported it with a pool of many) and for any loaded later."""
    os.environ.update(ONE_THREAD)
    try:
        threadpool_limits(limits=1)
    except Exception:  # noqa: BLE001 - a library threadpoolctl cannot drive keeps its pool, said by the self-check
        pass
