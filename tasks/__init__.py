"""Tasks for robust heuristic design, registered by name through entry points.

``get_task("obp")`` returns the task; third-party packages register their own under
the entry-point group ``raise_plugin.tasks`` (a ``Task`` subclass or a factory), and a
script may register one for its own process with ``register_task`` (worker processes
forked from it see it too; under the ``spawn`` start method use an entry point).
"""
from __future__ import annotations

from importlib import metadata

from .common import Task

__all__ = ["get_task", "list_tasks", "register_task", "Task"]

ENTRY_POINT_GROUP = "raise_plugin.tasks"
# Built-ins still resolve when the package runs from a source tree without being installed.
_BUILTIN = {"obp": "tasks.obp:OBPTask", "ojsp": "tasks.ojsp:OJSPTask", "ovrp": "tasks.ovrp:OVRPTask",
            "knapsack": "tasks.knapsack:KnapsackTask", "cvrp": "tasks.cvrp:CVRPTask"}
_cache: dict[str, Task] = {}
_registered: dict[str, Task] = {}


def _entry_points() -> dict[str, str]:
    found = dict(_BUILTIN)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found[ep.name] = ep.value
    return found


def register_task(task: Task | type) -> Task:
    """Register ``task`` (a ``Task`` or a ``Task`` subclass) under its ``name`` in this process.

    A name already registered (built-in, entry point or an earlier call) is refused, unless
    by the same class, when the task registered first is returned.
    """
    obj = task() if isinstance(task, type) else task
    if not isinstance(obj, Task):
        raise TypeError(f"register_task needs a tasks.Task, got {type(obj).__name__}")
    key = str(obj.name).strip().lower()
    earlier = _registered.get(key)
    if earlier is not None and type(earlier).__qualname__ == type(obj).__qualname__:
        return earlier
    if earlier is not None or key in _entry_points():
        raise ValueError(f"a task named {key!r} is already registered")
    _registered[key] = obj
    return obj


def list_tasks() -> list[str]:
    """Names of every registered task."""
    return sorted({*_entry_points(), *_registered})


def get_task(name: str) -> Task:
    """The task registered as ``name`` (one shared instance per name)."""
    key = str(name).strip().lower()
    if key in _registered:
        return _registered[key]
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
