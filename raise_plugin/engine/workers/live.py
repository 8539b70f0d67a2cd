"""The workers this process started that may still be alive, and the exit-time sweep that kills them."""
from __future__ import annotations

import weakref

__all__ = ["register_live_worker", "kill_live_workers"]

_LIVE: weakref.WeakSet = weakref.WeakSet()  # every handle that started a worker


def register_live_worker(worker) -> None:
    """Remember ``worker`` (a ``worker_handle.SandboxWorker`` that started a process) while it lives."""
    _LIVE.add(worker)


def kill_live_workers() -> None:
    """Kill every worker this process started that is still alive (at exit, before the clean
    fork server and the resource tracker are stopped: a live worker holds the tracker's pipe)."""
    for worker in list(_LIVE):
        try:
            worker.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
