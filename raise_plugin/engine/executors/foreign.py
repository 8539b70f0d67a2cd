"""Jobs and calls on executors that are not ours (a ``concurrent.futures`` pool, a Dask
``Client``): each runs in a sandbox pool local to the process it lands in (``run_job``,
``run_call``, ``SandboxedCalls``); and ``DaskExecutor``, evaluation on a Dask cluster
(the ``dask`` extra), which sends each instance set once per version."""
from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing
import threading
from typing import Any, Callable

from ..compiled import CompiledTally
from ..jobs import InstanceSet, Job
from ..limits import SandboxLimits
from ..results import EvalResult
from .local import ProcessExecutor, default_workers, executor_workers, pool_width
from .spec import CONNECT_SECONDS, DASK_MISSING, ExecutorSpecError, check_reachable

__all__ = ["DaskExecutor", "SandboxedCalls", "run_job", "run_call", "local_executor", "worker_width"]

_local_pools: dict[SandboxLimits, ProcessExecutor] = {}
# Dask's own lines (the tracebacks of a client that lost its scheduler) go where this process's logs go (a
# run's run_log.txt), not to the console by logging's last resort: the run says in one line what failed
_DASK_LINES = logging.NullHandler()
_local_lock = threading.Lock()


def _local_width() -> int:
    try:
        from distributed import get_worker  # only inside a Dask worker
        worker = get_worker()
        state = getattr(worker, "state", worker)
        return max(1, int(getattr(state, "nthreads", None) or getattr(worker, "nthreads")))
    except Exception:  # noqa: BLE001 - not in a Dask worker, or an older Dask
        return default_workers()


def worker_width() -> int:
    """How many evaluations this process should run at once for work of its own (a whole
    training run submitted as one job): the threads of its Dask worker inside one, else every
    core it may use."""
    return _local_width()


def _may_start_processes() -> None:
    """Lets this process start the sandbox's worker processes where it is a daemon: a worker of
    ``dask worker``, whose nanny starts it as one unless told ``distributed.worker.daemon: False``,
    refused them ("daemonic processes are not allowed to have children"). A daemon's children would
    outlive it; the sandbox's die with the process that started them (their parent-death signal)."""
    process = multiprocessing.current_process()
    if process.daemon:
        process.daemon = False


def local_executor(limits: SandboxLimits) -> ProcessExecutor:
    """This process's own sandbox pool (one per set of limits), created on first use."""
    with _local_lock:
        pool = _local_pools.get(limits)
        if pool is None:
            _may_start_processes()
            pool = _local_pools[limits] = ProcessExecutor(_local_width(), limits)
        return pool


def run_job(job: Job, instance_set: InstanceSet, limits: SandboxLimits | None = None) -> EvalResult:
    """Run ``job`` in a sandbox of the process this is called in (the function foreign
    executors are given). Workers of that process keep ``instance_set`` by id and version."""
    return local_executor(limits or SandboxLimits()).submit_job(job, instance_set).result()


def run_call(fn: Callable, args: tuple, kwargs: dict, limits: SandboxLimits | None = None):
    """``fn(*args, **kwargs)`` in a sandboxed worker of the process this is called in, under
    ``limits`` (what ``SandboxedCalls`` hands a foreign executor); raises what the call raised,
    ``CallTimeout`` or ``WorkerDied``."""
    return local_executor(limits or SandboxLimits()).submit(fn, *args, **kwargs).result()


class SandboxedCalls:
    """A foreign executor's ``submit`` whose calls run in a sandbox local to wherever they land
    (``run_call``): the call interface of a ``ProcessExecutor`` (``submit``, ``workers``,
    ``limits``) on a Dask cluster, for calls that run generated code."""

    def __init__(self, executor, limits: SandboxLimits):
        self._executor = executor
        self.limits = limits

    @property
    def workers(self) -> int:
        return executor_workers(self._executor)

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        return self._executor.submit(run_call, fn, args, kwargs, self.limits)

    def __repr__(self) -> str:
        return f"<SandboxedCalls on {self._executor!r}>"


# -- Dask -------------------------------------------------------------------------------------

class DaskExecutor:
    """Evaluation on a Dask cluster: ``address`` ``"local"`` starts a LocalCluster on
    127.0.0.1 (``workers`` processes, one thread each, or threads in this process with
    ``processes=False``); otherwise ``"HOST:PORT"`` / ``"tcp://HOST:PORT"`` of a scheduler.
    Or pass an existing ``client``. Instance sets are scattered once per version; each job
    runs in a sandbox pool local to its Dask worker. Needs Dask (``DASK_MISSING`` says how to install it).
    """

    def __init__(self, address: str | None = "local", *, workers: int | None = None,
                 limits: SandboxLimits | None = None, client=None, processes: bool = True):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ExecutorSpecError(DASK_MISSING) from None
        logging.getLogger("distributed").addHandler(_DASK_LINES)  # (once: a handler is added once)
        self.limits = limits or SandboxLimits()
        self._cluster = None
        self._own_client = client is None
        if client is not None:
            self.client = client
        elif address in (None, "", "local"):
            network = {"host": "127.0.0.1"} if processes else {}  # in-process clusters use no sockets
            # the scheduler's HTTP endpoint (health, metrics) on a free local port, not 0.0.0.0:8787
            import dask
            # worker processes must not be daemons: the sandbox starts processes of its own in them
            with dask.config.set({"distributed.worker.daemon": False}):
                self._cluster = LocalCluster(n_workers=pool_width(workers or None), threads_per_worker=1,
                                             processes=processes, dashboard_address="127.0.0.1:0", **network)
            self.client = Client(self._cluster)
        else:
            check_reachable(address)  # a scheduler that does not answer: one line now, not a silent wait per job
            target = address if "://" in address else f"tcp://{address}"
            try:
                self.client = Client(target, timeout=f"{CONNECT_SECONDS:g}s")
            except Exception as exc:  # noqa: BLE001 - no answer, or one that is not a Dask scheduler's: one line
                why = ("it closed the connection: a port that is not a Dask scheduler's?" if "closed" in str(exc).lower()
                       else str(exc) or type(exc).__name__)
                raise ExecutorSpecError(f"executor 'dask://{address}': no Dask scheduler answers at "
                                        f"{target.split('://', 1)[1]} ({why})") from None
        self._scattered: dict[str, tuple[int, Any]] = {}
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        self._lock = threading.Lock()

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        """``fn(*args, **kwargs)`` on a Dask worker, in the worker's own process: for the caller's
        code; ``sandboxed_calls().submit`` for calls that run generated code."""
        return _from_dask(self.client.submit(fn, *args, pure=False, **kwargs))

    def submit_sandboxed(self, fn: Callable, /, *args, **kwargs):
        """``fn(*args, **kwargs)`` in the sandbox pool of the Dask worker it lands on."""
        return self.sandboxed_calls().submit(fn, *args, **kwargs)

    def sandboxed_calls(self) -> SandboxedCalls:
        """Calls that run in a sandbox pool local to their Dask worker, under this executor's limits."""
        return SandboxedCalls(self, self.limits)

    def submit_job(self, job: Job, instance_set: InstanceSet) -> cf.Future:
        with self._lock:
            held = self._scattered.get(instance_set.id)
            if held is None or held[0] != instance_set.version:
                ref = self.client.scatter(instance_set, broadcast=True, hash=False)
                held = self._scattered[instance_set.id] = (instance_set.version, ref)
        future = _from_dask(self.client.submit(run_job, job, held[1], self.limits, pure=False))
        future.add_done_callback(lambda f: f.exception() is None and self.compiled.record(job, f.result()))
        return future

    def shutdown(self, wait: bool = True, **_) -> None:
        self._scattered.clear()
        if self._own_client:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    def __repr__(self) -> str:
        return f"<DaskExecutor {self.client.scheduler.address if self.client.scheduler else '?'}>"


def _from_dask(dask_future) -> cf.Future:
    """A ``concurrent.futures.Future`` mirroring a Dask future."""
    fut: cf.Future = cf.Future()
    fut.set_running_or_notify_cancel()

    def settle(df):
        try:
            fut.set_result(df.result())
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            fut.set_exception(exc)

    dask_future.add_done_callback(settle)
    return fut
