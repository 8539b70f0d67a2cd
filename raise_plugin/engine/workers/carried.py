"""What a worker started from a clean interpreter takes over from the engine: the global random
states, the files of modules it cannot import by name, and the tasks loaded by reference."""
from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import sys

import numpy as np

from tasks import SOURCES_VARIABLE, reference_sources

__all__ = ["carried_state", "take_over"]


class _EngineModules(importlib.abc.MetaPathFinder):
    """Finds, by their files, modules the engine had loaded that a fresh interpreter cannot
    import by name (a test module imported by path, a script's own helpers), so that functions
    from them can be sent to a worker. Consulted after every other finder."""

    def __init__(self, files: dict[str, str]):
        self.files = files
        self.packages = {name.rsplit(".", i)[0] for name in files for i in range(1, name.count(".") + 1)}

    def find_spec(self, name, path=None, target=None):
        file = self.files.get(name)
        if file is not None:
            return importlib.util.spec_from_file_location(name, file)
        if name in self.packages:  # a parent package that exists only as a name
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = []
            return spec
        return None


def carried_state() -> dict:
    """What a worker started from a clean interpreter takes over from the engine (a forked one
    has it already): the global random states, so that programs drawing from them see what
    they would in a forked worker, the files of modules it cannot import by name, and the tasks
    loaded by reference (``tasks.SOURCES_VARIABLE``), which its fork server may have started without."""
    roots = tuple(_resolved(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})
    files = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name != "__main__" and isinstance(file, str) and file.endswith(".py")
                and not _resolved(file).startswith(roots)):
            files[name] = file
    return {"random": (random.getstate(), np.random.get_state()), "modules": files,
            "task_sources": json.dumps(reference_sources())}


@functools.lru_cache(maxsize=None)
def _resolved(path: str) -> str:
    """``path`` with its links resolved, once for the process: a module's file stays where it was
    loaded from, and resolving reads every folder on the way (70 ms for a test process's 1,400
    modules, at every worker's start)."""
    return os.path.realpath(path)


def take_over(carried: dict | None) -> None:
    """In a worker started from a clean interpreter: what ``carried_state`` gave it."""
    if not carried:
        return
    if carried.get("task_sources"):  # the tasks loaded by reference, since the fork server started too
        os.environ[SOURCES_VARIABLE] = carried["task_sources"]
    state, numpy_state = carried["random"]
    random.setstate(state)
    np.random.set_state(numpy_state)
    sys.meta_path.append(_EngineModules(carried["modules"]))
