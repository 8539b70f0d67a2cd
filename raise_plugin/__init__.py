"""RAISE: robust LLM-driven heuristic design for LLM4AD (adversarial instances in an eps-ball).

Everything a user needs, from this one import (each name is loaded on first use)::

    import raise_plugin as rp

    task = rp.get_task("knapsack")                        # or "my_task.py:MyTask", "package.module:MyTask"
    result = rp.compare(task="knapsack", methods=("eoh", "eohs"), budget=30, pop_size=4, seeds=2)
    print(result.tables["table_all_distributions"].markdown())
    result.figures                                        # convergence.png, adversarial_distributions.png

- tasks: ``get_task``, ``list_tasks``, ``register_task``; for writing one: ``Task``,
  ``HostTask``, ``ShiftDimension``, ``HeuristicError``, ``decide`` (docs/tasks.md);
- a robust method: ``robust``, ``AdversarialInstanceCallback``, ``get_method``, ``make_llm``;
  a recorded run: ``start_run(RunConfig(...)).run()`` (returns the run's summary),
  ``resume_run(path)``, ``replaying(path)`` (its config again, its answers replayed), ``RunLog``;
- the harness: ``compare`` (``CompareConfig`` fields as keywords), ``run_compare``,
  ``profile`` (the robustness profile), ``evaluate_suite``, ``Heuristic``; ``stats`` (paired
  tests), ``figures`` (convergence and adversarial distributions), ``paper_tables`` and
  ``significance`` (the whole suite's verdicts) as modules.

Every name is described, with what it takes and returns, in docs/api.md.

The plugin's task package is the top-level ``tasks``; it is pinned here, so a file called
``tasks.py`` in the working directory (beside a notebook) does not hide it.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

from .ast_lock import guard_ast_parse as _guard_ast_parse

__version__ = "0.1.0"
HOST_REQUIREMENT = "llm4ad==1.11"


def host_missing() -> str | None:
    """The one line saying what to install where the host, llm4ad, cannot be found (the plugin's own
    metadata leaves it out: the host's pulls torch and more, so it is installed apart, without them);
    ``None`` where it can."""
    if importlib.util.find_spec("llm4ad") is None:
        return (f"the host llm4ad is not installed: pip install --no-deps {HOST_REQUIREMENT} (without its torch "
                "and other extras, which the plugin does not use; docs/install.md)")
    return None


def _pin_task_package() -> None:
    """Import the plugin's own ``tasks`` package from beside this one, whatever the path says;
    a ``tasks`` module imported before from elsewhere is refused in one line."""
    own = Path(__file__).resolve().parent.parent / "tasks" / "__init__.py"
    loaded = sys.modules.get("tasks")
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
        if origin is None or Path(origin).resolve() != own:
            raise ImportError(f"a module named 'tasks' ({origin or 'a namespace'}) was imported before raise_plugin "
                              "and hides the plugin's task package; rename it (e.g. my_tasks.py)")
        return
    if not own.is_file():  # an unusual install: leave the path to find it
        return
    spec = importlib.util.spec_from_file_location("tasks", own, submodule_search_locations=[str(own.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tasks"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["tasks"]
        raise


if host_missing() is None:  # else every task imports the host: said in one line where a task is first used
    _pin_task_package()
_guard_ast_parse()  # before the host or a task parses a program in a thread (ast_lock)

# public name -> (module, attribute); None as attribute: the module itself
_EXPORTS = {
    "get_task": ("tasks", "get_task"), "list_tasks": ("tasks", "list_tasks"),
    "register_task": ("tasks", "register_task"), "Task": ("tasks.common", "Task"),
    "HostTask": ("tasks.common.adapter", "HostTask"), "ShiftDimension": ("tasks.common", "ShiftDimension"),
    "HeuristicError": ("tasks.common", "HeuristicError"), "decide": ("tasks.common", "decide"),
    "AdversarialInstanceCallback": ("raise_plugin.robust.refresh", "AdversarialInstanceCallback"),
    "get_method": ("raise_plugin.methods", "get_method"), "make_llm": ("raise_plugin.llm", "make_llm"),
    "RunConfig": ("raise_plugin.config", "RunConfig"), "start_run": ("raise_plugin.runner", "start_run"),
    "resume_run": ("raise_plugin.runner", "resume_run"), "replaying": ("raise_plugin.replay", "replaying"),
    "compare": ("raise_plugin.harness.api", "compare"), "CompareConfig": ("raise_plugin.harness.compare_config", "CompareConfig"),
    "profile": ("raise_plugin.harness.api", "profile"),
    "run_compare": ("raise_plugin.harness.compare", "run_compare"),
    "evaluate_suite": ("raise_plugin.engine.suite", "evaluate_suite"),
    "Heuristic": ("raise_plugin.engine.suite", "Heuristic"),
    "RunLog": ("raise_plugin.rundir.reader", "RunLog"),
    "stats": ("raise_plugin.harness.stats", None), "figures": ("raise_plugin.harness.figures", None),
    "paper_tables": ("raise_plugin.harness.paper_tables", None),
    "significance": ("raise_plugin.harness.significance", None), "UserError": ("raise_plugin.errors", "UserError"),
}

__all__ = sorted({*_EXPORTS, "robust"})


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'raise_plugin' has no attribute {name!r}")
    module_name, attribute = _EXPORTS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "llm4ad" or host_missing() is None:
            raise
        raise ImportError(host_missing()) from None
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Plugin(types.ModuleType):
    """``raise_plugin.robust`` is a subpackage and the function users want from one import; the
    import system records the subpackage as this module's attribute once it is imported, so the
    attribute is a property that always gives the function (``from raise_plugin.robust import ...``
    still reaches the subpackage)."""

    @property
    def robust(self):
        return importlib.import_module("raise_plugin.robust").robust  # loaded on first use, as _EXPORTS

    @robust.setter
    def robust(self, subpackage) -> None:
        pass


sys.modules[__name__].__class__ = _Plugin
