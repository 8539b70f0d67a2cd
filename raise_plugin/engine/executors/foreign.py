"""Jobs and calls on executors that are not ours (a ``concurrent.futures`` pool, a Dask
``Client``): each runs in a sandbox pool local to the process it lands in (``run_job``,
``run_call``, ``SandboxedCalls``); and ``DaskExecutor``, evaluation on a Dask cluster
(the ``dask`` extra), which sends each instance set once per version."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import threading
import time
from typing import Any, Callable

from ..compiled import CompiledTally
from ..jobs import InstanceSet, Job
from ..limits import SandboxLimits
from ..results import EvalResult
from .dask_lines import PRELOAD, off_console
from .local import ProcessExecutor, default_workers, executor_workers, pool_width
from .spec import CONNECT_SECONDS, DASK_MISSING, ExecutorSpecError, check_reachable

__all__ = ["DaskExecutor", "no_worker_line", "SandboxedCalls", "run_job", "run_call", "local_executor", "worker_width"]

_local_pools: dict[SandboxLimits, ProcessExecutor] = {}
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
        off_console()  # what failed, the command says in one line of its own
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
            # its workers share this process's console: their Dask lines and this process's notes stay off it
            with dask.config.set({"distributed.worker.daemon": False, "distributed.worker.preload": [PRELOAD]}):
                self._cluster = LocalCluster(n_workers=pool_width(workers or None), threads_per_worker=1,
                                             processes=processes, dashboard_address="127.0.0.1:0", **network)
            self.client = Client(self._cluster)
        else:
            check_reachable(address)  # a scheduler that does not answer: one line now, not a silent wait per job
            target = address if "://" in address else f"tcp://{address}"
            try:
                self.client = Client(target, timeout=f"{CONNECT_SECONDS:g}s")
            except Exception as exc:  # noqa: BLE001 - no answer, or one that is not a Dask scheduler's: one line
                said = str(exc).lower()  # the port took the connection (``check_reachable``): closed, or Dask gave up
                why = ("it took the connection but gave no Dask scheduler's answer: a port that is not a Dask "
                       "scheduler's?" if "closed" in said or "timed out" in said else str(exc) or type(exc).__name__)
                raise ExecutorSpecError(f"executor 'dask://{address}': no Dask scheduler answers at "
                                        f"{target.split('://', 1)[1]} ({why})") from None
        self._scattered: dict[str, tuple[int, Any]] = {}
        self.compiled = CompiledTally()  # the compiled path's programs (``limits.jit``)
        self._lock = threading.Lock()
        self._workerless_since: float | None = None  # when ``without_workers`` first found none (since then)
        self._waiting: dict[cf.Future, Any] = {}  # what was sent to the cluster, not yet settled: its Dask future
        self._watching: threading.Thread | None = None
        self._closed = threading.Event()

    def wait_for_worker(self) -> None:
        """Wait for a worker at the scheduler, at most ``CONNECT_SECONDS`` (one that joins meanwhile is
        taken); a ``TimeoutError`` saying so (``no_worker_line``) when none did."""
        try:
            self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except TimeoutError:
            raise TimeoutError(no_worker_line(self.client.scheduler.address)) from None

    def without_workers(self) -> bool:
        """Whether the scheduler has had no worker for ``CONNECT_SECONDS``, as this method's calls saw it
        (each asks the scheduler now): Dask keeps work that no worker can take waiting for one for ever.
        A client that lost its scheduler is no answer (``False``): it says so itself."""
        try:
            count = len(self.client.nthreads()) if self.client.status == "running" else None
        except Exception:  # noqa: BLE001 - the connection went as it asked
            count = None
        if count != 0:
            self._workerless_since = None
            return False
        now = time.monotonic()
        if self._workerless_since is None:
            self._workerless_since = now
        return now - self._workerless_since >= CONNECT_SECONDS

    def _no_worker(self) -> TimeoutError:
        return TimeoutError(no_worker_line(self.client.scheduler.address))

    def _mirror(self, send: Callable) -> cf.Future:
        """A ``concurrent.futures.Future`` mirroring the Dask future ``send()`` makes, failed at once (a
        ``TimeoutError``, ``no_worker_line``) while the cluster has had no worker for ``CONNECT_SECONDS``, and
        failed so by ``_watch`` when that comes to pass before it ends."""
        fut: cf.Future = cf.Future()
        fut.set_running_or_notify_cancel()
        if self._workerless_since is not None and self.without_workers():  # (asked only once ``_watch`` saw none)
            fut.set_exception(self._no_worker())
            return fut

        def settle(dask_future) -> None:
            try:
                _settle(fut, None, dask_future.result())
            except cf.CancelledError as exc:  # Dask's: its connection went, or what the work needed went with a worker
                reason = getattr(exc, "reason", "unknown")
                _settle(fut, exc if reason == "scheduler-connection-lost" else RuntimeError(
                    f"Dask dropped it ({reason}): the workers that held what it needed (its instances) were lost"))
            except BaseException as exc:  # noqa: BLE001 - delivered through the future
                _settle(fut, exc)
            with self._lock:
                self._waiting.pop(fut, None)

        dask_future = send()
        with self._lock:
            self._waiting[fut] = dask_future
            if self._watching is None:
                self._watching = threading.Thread(target=self._watch, name="raise-dask-workers", daemon=True)
                self._watching.start()
        dask_future.add_done_callback(settle)
        return fut

    def _watch(self) -> None:
        """Fails what was sent to the cluster once it has had no worker for ``CONNECT_SECONDS`` (its workers
        all left, or none joined): Dask keeps what no worker can take waiting for one for ever. It is cancelled
        there too: a worker that joined later would have run it, unseen (a compare's training job, say)."""
        while not self._closed.wait(0.5):
            with self._lock:
                waiting = list(self._waiting.items())
            if waiting and self.without_workers():
                for fut, _ in waiting:
                    _settle(fut, self._no_worker())
                try:
                    self.client.cancel([dask_future for _, dask_future in waiting])
                except Exception:  # noqa: BLE001 - the connection went meanwhile: the scheduler forgets them itself
                    pass

    @property
    def workers(self) -> int:
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, /, *args, **kwargs) -> cf.Future:
        """``fn(*args, **kwargs)`` on a Dask worker, in the worker's own process: for the caller's
        code; ``sandboxed_calls().submit`` for calls that run generated code."""
        return self._mirror(lambda: self.client.submit(fn, *args, pure=False, **kwargs))

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
                try:  # Dask waits for a worker as long as its client's timeout, CONNECT_SECONDS
                    ref = self.client.scatter(instance_set, broadcast=True, hash=False)
                except TimeoutError:  # its own words, "No valid workers found", say neither where nor why
                    raise TimeoutError(no_worker_line(self.client.scheduler.address)) from None
                held = self._scattered[instance_set.id] = (instance_set.version, ref)
        future = self._mirror(lambda: self.client.submit(run_job, job, held[1], self.limits, pure=False))
        future.add_done_callback(lambda f: f.exception() is None and self.compiled.record(job, f.result()))
        return future

    def shutdown(self, wait: bool = True, **_) -> None:
        self._closed.set()
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


def no_worker_line(scheduler: str) -> str:
    """What to say of the Dask scheduler at ``scheduler`` (``tcp://HOST:PORT``) that has had no worker
    for ``CONNECT_SECONDS``, and what to do."""
    return (f"no Dask worker joined the scheduler at {scheduler} within {CONNECT_SECONDS:g} s (start one: "
            f"dask worker {scheduler} --nthreads 1)")


def _settle(future: cf.Future, failure: BaseException | None, result=None) -> None:
    """``future`` given its outcome, unless it has one already (one failed for want of workers that ends
    after all)."""
    try:
        if failure is None:
            future.set_result(result)
        else:
            future.set_exception(failure)
    except cf.InvalidStateError:
        pass
