"""Executor specs as the user writes them (``"serial"``, ``"process:N"``, ``"dask://HOST:PORT"``),
read without starting anything, the one-line error for one that names no executor, whether Dask is
installed for a spec that names it (``check_dask``) and whether a Dask scheduler a spec names answers
(``check_reachable``)."""
from __future__ import annotations

import socket

from raise_plugin.errors import UserError

__all__ = ["ExecutorSpecError", "parse_executor_spec", "check_spec", "check_dask", "check_reachable", "CONNECT_SECONDS",
           "DASK_MISSING"]


# how long a Dask scheduler may take to answer before a run or an evaluation refuses it
CONNECT_SECONDS = 10.0
# the packages the plugin's dask extra installs, named as PyPI knows them (the plugin itself is not there)
DASK_MISSING = "the Dask executor needs Dask: pip install 'dask[distributed]>=2024.1'"


class ExecutorSpecError(UserError, ValueError):
    """An executor spec that names no executor (a one-line message for the user)."""


def parse_executor_spec(spec) -> tuple[str, object]:
    """``(kind, argument)`` of an executor spec, without starting anything: ``("process", N or
    None)``, ``("serial", None)``, ``("dask", "local" | ("local", N) | "HOST:PORT")``;
    ``ExecutorSpecError`` for anything else."""
    if spec is None or isinstance(spec, int):
        return "process", spec
    text = str(spec).strip()
    lower = text.lower()
    if lower == "serial":
        return "serial", None
    if lower == "process" or lower.startswith("process:"):
        count = lower.partition(":")[2]
        if count and not _positive(count):
            raise ExecutorSpecError(f"executor {spec!r}: use process:N with N a positive integer")
        return "process", int(count) if count else None
    if lower.startswith("dask://"):
        target = text[len("dask://"):]
        if target.lower() == "local" or target.lower().startswith("local:"):
            count = target.partition(":")[2]
            if count and not _positive(count):
                raise ExecutorSpecError(f"executor {spec!r}: use dask://local:N with N a positive integer")
            return "dask", ("local", int(count) if count else None)
        if not target:
            raise ExecutorSpecError(f"executor {spec!r}: give dask://HOST:PORT or dask://local")
        return "dask", target
    raise ExecutorSpecError(f"unknown executor {spec!r}: use serial, process, process:N, dask://local or dask://HOST:PORT")


def _positive(count: str) -> bool:
    return count.isdigit() and int(count) > 0


def check_spec(spec) -> tuple[str, object]:
    """``parse_executor_spec(spec)``, and when it names Dask, Dask installed (``check_dask``) and a
    scheduler's address one that answers (``check_reachable``): an ``ExecutorSpecError`` otherwise."""
    kind, arg = parse_executor_spec(spec)
    if kind == "dask":
        check_dask()
        if isinstance(arg, str):
            check_reachable(arg)
    return kind, arg


def check_dask() -> None:
    """An ``ExecutorSpecError`` saying how to install Dask where its ``distributed`` package cannot be
    imported: a run or a compare refuses a Dask executor before it writes anything, not at its first job."""
    try:
        import distributed  # noqa: F401  (imported once: the executor imports it again when it is made)
    except ImportError:
        raise ExecutorSpecError(DASK_MISSING) from None


def check_reachable(target: str, seconds: float = CONNECT_SECONDS) -> None:
    """An ``ExecutorSpecError`` when nothing answers at the Dask scheduler ``target`` (``HOST:PORT``
    or ``tcp://HOST:PORT``) within ``seconds``: a run or an evaluation would otherwise wait on it."""
    address = target.split("://", 1)[-1]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:  # ':8786' named no host; 99999 no port
        raise ExecutorSpecError(f"executor 'dask://{target}': give dask://HOST:PORT with HOST the scheduler's name or "
                                f"address and PORT a number from 1 to 65535")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as exc:
        why = f"no answer within {seconds:g} s" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ExecutorSpecError(f"executor 'dask://{target}': no Dask scheduler answers at {address} ({why})") from None
