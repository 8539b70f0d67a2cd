"""Executor specs as the user writes them (``"serial"``, ``"process:N"``, ``"dask://HOST:PORT"``),
read without starting anything, and the one-line error for one that names no executor."""
from __future__ import annotations

from raise_plugin.errors import UserError

__all__ = ["ExecutorSpecError", "parse_executor_spec"]


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
        if count and not count.isdigit():
            raise ExecutorSpecError(f"executor {spec!r}: use process:N with N a positive integer")
        return "process", int(count) if count else None
    if lower.startswith("dask://"):
        target = text[len("dask://"):]
        if target.lower() == "local" or target.lower().startswith("local:"):
            count = target.partition(":")[2]
            if count and not count.isdigit():
                raise ExecutorSpecError(f"executor {spec!r}: use dask://local:N with N a positive integer")
            return "dask", ("local", int(count) if count else None)
        if not target:
            raise ExecutorSpecError(f"executor {spec!r}: give dask://HOST:PORT or dask://local")
        return "dask", target
    raise ExecutorSpecError(f"unknown executor {spec!r}: use serial, process, process:N, dask://local or dask://HOST:PORT")
