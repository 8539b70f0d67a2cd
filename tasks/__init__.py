"""Tasks for robust heuristic design, registered by name through entry points.

``get_task("obp")`` returns the task; third-party packages register their own under
the entry-point group ``raise_plugin.tasks`` (a ``Task`` subclass or a factory).
"""
from __future__ import annotations

from importlib import metadata

from .common import Task

__all__ = ["get_task", "list_tasks", "Task"]

ENTRY_POINT_GROUP = "raise_plugin.tasks"
# Built-ins still resolve when the package runs from a source tree without being installed.
_BUILTIN = {"obp": "tasks.obp:OBPTask", "ojsp": "tasks.ojsp:OJSPTask", "ovrp": "tasks.ovrp:OVRPTask"}
_cache: dict[str, Task] = {}


def _entry_points() -> dict[str, str]:
    found = dict(_BUILTIN)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.value
    return found


def list_tasks() -> list[str]:
    """Names of every registered task."""
    return sorted(_entry_points())


def get_task(name: str) -> Task:
    """The task registered as ``name`` (one shared instance per name)."""
    key = str(name).strip().lower()
    if key in _cache:
        return _cache[key]
    targets = _entry_points()
    if key not in targets:
        raise KeyError(f"unknown task {name!r}; registered: {', '.join(sorted(targets))}")
    module_name, _, attr = targets[key].partition(":")
    obj = __import__(module_name, fromlist=[attr])
    for part in attr.split("."):
        obj = getattr(obj, part)
    task = obj() if callable(obj) else obj
    if not isinstance(task, Task):
        raise TypeError(f"entry point {key!r} gave {type(task).__name__}, not a tasks.Task")
    _cache[key] = task
    return task
