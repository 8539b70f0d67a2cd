"""Python's builtins and the modules a task's simulator calls (``math``, ``random``, ``numpy``,
``numpy.random``) as a program's process held them before the program ran. A program that replaces
or removes a name there (``builtins.len = ...``, ``__builtins__["abs"] = ...``, ``np.asarray =
...``, ``random.seed = ...``), or one of those modules in ``sys.modules``, changes it for the task's
own code and for the process's answers too, which then misbehave (an answer that never ends, a
simulator that fails or loops, generators no longer seeded before each instance):
``HeldModules.put_back`` names what it replaced and puts it back, so that the process can say so. A
name a program adds is its own. The check gives a reason; it holds nothing: what a process does to
its interpreter reaches only its own answers, which its judge replays."""
from __future__ import annotations

import builtins
import importlib
import sys
from operator import is_

__all__ = ["HeldModules", "HELD_MODULES"]

HELD_MODULES = ("builtins", "math", "random", "numpy", "numpy.random")
_MISSING = object()
_SHOWN = 3  # the names a reason lists, then how many more


class _Namespace:
    """One module's names and values as held, and as last seen (in the order they stand)."""

    def __init__(self, name: str, namespace: dict):
        self.name, self.namespace = name, namespace
        self.held = tuple(namespace.items())
        self.seen()

    def seen(self) -> None:
        self.values = tuple(self.namespace.values())
        self.count = len(self.values)


class HeldModules:
    """Python's builtins and ``HELD_MODULES`` as they stand now, to be held against what they are later."""

    def __init__(self, modules: tuple[str, ...] = HELD_MODULES):
        self._namespaces = tuple(_Namespace(name, vars(builtins) if name == "builtins" else
                                            vars(importlib.import_module(name))) for name in modules)
        self._modules = sys.modules  # and the modules themselves, where an import finds them
        self._entries = tuple((name, sys.modules[name]) for name in modules)

    def put_back(self, _len=len, _all=all, _map=map) -> str:
        """``""`` where every name held is there as it was; else a one-line reason naming each one
        replaced or removed since (``the program replaces builtins.len, ...``), every one of them
        put back first. Its own steps use no builtin a program can have replaced (those it needs
        were bound here before any program ran)."""
        replaced, removed = [], []
        for held in self._namespaces:
            namespace = held.namespace
            if _len(namespace) == held.count and _all(_map(is_, held.values, namespace.values())):
                continue  # the usual case, at C speed: any value replaced, or any name removed or added, differs
            for name, value in held.held:
                now = namespace.get(name, _MISSING)
                if now is not value:
                    (removed if now is _MISSING else replaced).append(f"{held.name}.{name}")
                    namespace[name] = value  # one removed comes back last: ``seen`` takes the new order
            held.seen()
        if sys.modules is not self._modules:
            sys.modules = self._modules
            replaced.append("sys.modules")
        for name, module in self._entries:  # a lazy import (``np.ma``) meets what ``sys.modules`` holds
            now = self._modules.get(name, _MISSING)
            if now is not module:
                (removed if now is _MISSING else replaced).append(f"sys.modules[{name!r}]")
                self._modules[name] = module
        if not replaced and not removed:  # none, or names added, or one removed and put back as it was
            return ""
        changed = " and ".join(f"{verb} {_names(names)}" for verb, names in (("replaces", replaced),
                                                                             ("removes", removed)) if names)
        return f"the program {changed}, which the task's own code runs on too: a program may not change " \
               f"Python's builtins, math, random or numpy"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown if len(names) <= _SHOWN else f"{shown} and {len(names) - _SHOWN} more"
