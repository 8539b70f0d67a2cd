"""Sandboxed worker processes: the process itself (``worker``), the engine's handle on one
(``handle``), the clean fork server they start from (``cleanstart``), what they take over from the
engine (``carried``) and the sweep of those still alive at exit (``live``)."""
from .handle import CallTimeout, SandboxWorker, WorkerDied, start_method

__all__ = ["CallTimeout", "SandboxWorker", "WorkerDied", "start_method"]
