"""Tasks for robust heuristic design, found by name, by file or by module.

``get_task("obp")`` returns a registered task: the built-ins, those of installed packages
(entry-point group ``raise_plugin.tasks``, a ``Task`` subclass or a factory) and those a
script registers for its own process with ``register_task``. ``get_task`` also loads a task
without any packaging: ``"path/to/my_task.py:MyTask"`` executes that file and takes the
class, ``"package.module:MyTask"`` imports the module (from the path, or else from the
working directory). Loading runs the researcher's own task code in this process (it is
their code, not generated code). A task loaded so is registered under its ``name`` too, and
its reference is passed on to child processes through the environment, so evaluation
workers and compare's job processes find it by name whatever their start method.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import stat
import sys
import zlib
from importlib import metadata
from pathlib import Path

from .common import Task
from .common.behaviour import check_name
from .common.errors import BadArgument, BadArgumentType, UnknownName, UserError

__all__ = ["get_task", "list_tasks", "register_task", "registered_here", "reference_sources", "task_reference", "reference_of",
           "is_task_reference", "TaskReferenceError", "Task"]

ENTRY_POINT_GROUP = "raise_plugin.tasks"
# Built-ins still resolve when the package runs from a source tree without being installed.
_BUILTIN = {"obp": "tasks.obp:OBPTask", "ojsp": "tasks.ojsp:OJSPTask", "ovrp": "tasks.ovrp:OVRPTask",
            "knapsack": "tasks.knapsack:KnapsackTask", "cvrp": "tasks.cvrp:CVRPTask"}
# name -> [reference, path entry or null] of every task loaded by reference in this process or a parent
SOURCES_VARIABLE = "RAISE_PLUGIN_TASK_SOURCES"
_cache: dict[str, Task] = {}
_registered: dict[str, Task] = {}
_references: dict[str, str] = {}  # name -> the file or module reference it was loaded from


class TaskReferenceError(UserError):
    """A task reference (``file.py:Class``, ``package.module:Class``) that cannot give a task."""


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
    if isinstance(task, type) and issubclass(task, Task) and inspect.isabstract(task):
        raise BadArgumentType(f"task: {task.__name__} leaves {', '.join(sorted(task.__abstractmethods__))} undefined: "
                              f"register a subclass that defines them")
    if not isinstance(task, Task) and not (isinstance(task, type) and issubclass(task, Task)):
        raise BadArgumentType(f"task: register_task takes a tasks.Task or a Task subclass, got "
                              f"{type(task).__name__} {task!r:.40}")
    obj = task() if isinstance(task, type) else task
    check_name(obj)  # a name the workers would read as a reference ("lb:x") fails there, not here
    key = obj.name.strip().lower()
    earlier = _registered.get(key)
    if earlier is not None and type(earlier).__qualname__ == type(obj).__qualname__:
        return earlier
    if earlier is not None or key in _entry_points():
        raise BadArgument(f"task: a task named {key!r} is already registered")
    _registered[key] = obj
    return obj


def reference_sources() -> dict[str, list]:
    """The tasks loaded by reference in this process, as ``SOURCES_VARIABLE`` hands them to another
    process: the variable's own entries, and each loaded here that it does not name (a task met
    again in the cache does not write the variable again)."""
    sources = _inherited_sources()
    for key, reference in _references.items():
        sources.setdefault(key, [reference, None])
    return sources


def registered_here() -> list[str]:
    """Names of the tasks registered in this process with ``register_task``, which exist nowhere
    else; not those loaded by reference, which another process loads by it (``SOURCES_VARIABLE``)."""
    return [name for name in _registered if name not in _references]


class TaskNames(list):
    """The names of the registered tasks; ``in`` also accepts a file or module reference, which
    it loads (a reference that cannot be loaded, or a file or module named without its class,
    raises its one-line ``TaskReferenceError``)."""

    def __contains__(self, name) -> bool:
        if isinstance(name, str) and (is_task_reference(name) or _is_bare_file(name) or (
                not super().__contains__(name.strip().lower()) and _module_source(name) is not None)):
            get_task(name)
            return True
        return super().__contains__(name)


def list_tasks() -> TaskNames:
    """Names of every registered task (those loaded by reference included, by their names)."""
    return TaskNames(sorted({*_entry_points(), *_registered, *_inherited_sources()}))


def is_task_reference(name: str) -> bool:
    """Whether ``name`` names a task by file (``path/file.py:Class``) or module (``package.module:Class``)."""
    return ":" in str(name)


def task_reference(name: str) -> str:
    """The stable form of a task's name: a registered name as it is, a file reference with the
    file's absolute path (so a run started here resumes from any directory)."""
    return reference_of(get_task(name))


def reference_of(task: Task) -> str:
    """How another process finds ``task``: the reference it was loaded from, else its name."""
    key = str(task.name).strip().lower()
    return _references.get(key, task.name) if _registered.get(key) is task else task.name


def get_task(name: str) -> Task:
    """The task registered as ``name`` (one shared instance per name), or the one a file or
    module reference (``path/to/file.py:Class``, ``package.module:Class``) declares."""
    text = str(name).strip()
    if is_task_reference(text):
        return _load_reference(text)
    key = text.lower()
    if key in _registered:
        return _registered[key]
    if key in _cache:
        return _cache[key]
    inherited = _inherited_sources()
    if key in inherited:
        reference, path_entry = inherited[key]
        if path_entry and path_entry not in sys.path:
            sys.path.append(path_entry)
        return _load_reference(reference, check=False)  # checked by the process that loaded it first
    targets = _entry_points()
    if key not in targets and _is_bare_file(text):
        raise TaskReferenceError(_class_missing(text))
    source = None if key in targets else _module_source(text)
    if source is not None:
        raise TaskReferenceError(_class_missing(text, source))
    if key not in targets:
        raise UnknownName(f"unknown task {name!r}; registered: {', '.join(sorted(targets))}")
    module_name, _, attr = targets[key].partition(":")
    obj = __import__(module_name, fromlist=[attr])
    for part in attr.split("."):
        obj = getattr(obj, part)
    task = obj() if callable(obj) else obj
    if not isinstance(task, Task):
        raise TypeError(f"entry point {key!r} gave {type(task).__name__}, not a tasks.Task")
    _cache[key] = task
    return task


# --------------------------------------------------------------------------- tasks by reference
def _inherited_sources() -> dict[str, list]:
    try:
        found = json.loads(os.environ.get(SOURCES_VARIABLE, "{}"))
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _is_bare_file(text: str) -> bool:
    """A Python file named without the class to take from it (``my_task.py``)."""
    return str(text).strip().endswith(".py") and not is_task_reference(text)


def _module_source(text: str) -> Path | None:
    """The source file of a module named without its class (``package.module``), found, not run
    (its packages are imported, as ``package.module:Class`` imports them); None for any other name."""
    parts = str(text).strip().split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        return None
    try:
        spec = importlib.util.find_spec(str(text).strip())
    except Exception:  # a package that is not there, or whose own code fails: no module of that name
        return None
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and origin.endswith(".py") else None


def _class_missing(text: str, path: Path | None = None) -> str:
    """What a file or module named without its class lacks, with the classes its file defines
    (read, not run)."""
    if path is None:
        path = Path(text).expanduser()
    wrong = _not_a_task_file(path)
    if wrong:
        return f"task {text!r}: {wrong} (a task file is named path/to/file.py:ClassName)"
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as exc:
        return f"task {text!r}: name the class: {text}:ClassName (the file does not parse: {exc})"
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    tasks = []  # a class of a base named ...Task, or of a task class of the file
    for c in classes:
        if any(ast.unparse(b).endswith("Task") or ast.unparse(b) in tasks for b in c.bases):
            tasks.append(c.name)
    found = tasks or [c.name for c in classes]
    if len(tasks) == 1:
        return f"task {text!r}: name the class: {text}:{tasks[0]} (the one task class found in the file)"
    kind = "task classes" if len(tasks) > 1 else "classes"
    return (f"task {text!r}: name the class: {text}:ClassName; {kind} found in the file: "
            f"{', '.join(found) if found else 'none'}")


def _load_reference(text: str, check: bool = True) -> Task:
    if text in _cache:
        return _cache[text]
    target, _, attr = text.rpartition(":")
    if not target or not attr:
        raise TaskReferenceError(f"task {text!r}: give path/to/file.py:Class or package.module:Class")
    is_file = target.endswith(".py") or "/" in target or os.sep in target
    if is_file:
        path = Path(target).expanduser().resolve()
        reference = f"{path}:{attr}"
        if reference in _cache:
            return _cache.setdefault(text, _cache[reference])
        module, path_entry = _module_from_file(text, path), None
    else:
        reference = text
        module, path_entry = _module_by_name(text, target)
    task = _task_from(text, module, attr)
    try:  # what its code gives, once: a task that cannot work is refused here, not in a worker mid-run
        if check:
            task.check_behaviour()
    except (ValueError, TypeError) as exc:  # TypeError: a high that is no number, compared
        raise TaskReferenceError(f"task {text!r}: {exc}") from None
    key = str(task.name).strip().lower()
    taken = _registered.get(key)
    if taken is not None and _references.get(key) != reference or taken is None and key in _entry_points():
        where = _references.get(key, "a registered task")
        raise TaskReferenceError(f"task {text!r}: its name {task.name!r} is taken by {where}; give the task "
                                 "another name")
    if taken is not None:  # the same reference again, e.g. from a child process's environment
        task = taken
    _registered[key] = task
    _references[key] = reference
    _cache[text] = _cache[reference] = task
    sources = _inherited_sources()
    sources[key] = [reference, path_entry]
    os.environ[SOURCES_VARIABLE] = json.dumps(sources)
    return task


def _not_a_task_file(path: Path) -> str | None:
    """Why ``path`` cannot be a task file (missing, a folder, no regular file, not ``.py``), or None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"no such file {path.resolve()}"
    except OSError as exc:
        return f"{path} cannot be read ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return f"{path} is a folder, not a file"
    if not stat.S_ISREG(mode):
        kind = next((what for test, what in _SPECIAL_FILES if test(mode)), "a special file")
        return f"{path} is {kind}, not a regular file"
    if path.suffix != ".py":
        return f"{path} is not a Python file: its name does not end in .py"
    return None


_SPECIAL_FILES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                  (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))


def _module_from_file(text: str, path: Path):
    wrong = _not_a_task_file(path)
    if wrong:
        raise TaskReferenceError(f"task {text!r}: {wrong} (a task file is named path/to/file.py:ClassName)")
    module_name = f"raise_task_{path.stem}_{zlib.crc32(str(path).encode()):08x}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before running it: dataclasses and pickling look it up
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[module_name]
        raise TaskReferenceError(f"task {text!r}: {_code_error(exc, path)}") from None
    return module


def _module_by_name(text: str, target: str):
    """The module ``target``: from the path, else from the working directory (as ``python -m``
    would find it); the second item is the path entry added for it, if one was."""
    for path_entry in (None, os.getcwd()):
        if path_entry is not None:
            if path_entry in sys.path:
                break
            sys.path.append(path_entry)
        try:
            return importlib.import_module(target), path_entry
        except ModuleNotFoundError as exc:
            if exc.name is None or not target.startswith(exc.name):
                raise TaskReferenceError(f"task {text!r}: {_code_error(exc)}") from None
            if path_entry is not None:
                sys.path.remove(path_entry)
        except BaseException as exc:
            raise TaskReferenceError(f"task {text!r}: {_code_error(exc)}") from None
    if Path(target).expanduser().is_file():  # a file named without .py or a folder: what it is
        _module_from_file(text, Path(target).expanduser().resolve())
    raise TaskReferenceError(f"task {text!r}: no module named {target!r} (not installed, not under the working "
                             "directory)")


def _code_error(exc: BaseException, path: Path | None = None) -> str:
    """One line for an error raised by the task's own code (where it is, what it is)."""
    if isinstance(exc, SyntaxError):
        line = f", line {exc.lineno}" if exc.lineno is not None else ""
        return f"{exc.filename or path}{line}: SyntaxError: {exc.msg}"
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    own = [f for f in frames if path is None or Path(f.tb_frame.f_code.co_filename) == path]
    where = f"{own[-1].tb_frame.f_code.co_filename}, line {own[-1].tb_lineno}: " if own else ""
    return f"{where}{type(exc).__name__}: {exc}"


def _task_from(text: str, module, attr: str) -> Task:
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            found = sorted(n for n, v in vars(module).items()
                           if isinstance(v, type) and issubclass(v, Task) and v.__module__ == module.__name__)
            hint = f"; it declares {', '.join(found)}" if found else "; it declares no Task subclass"
            where = getattr(module, "__file__", None) if module.__name__.startswith("raise_task_") else None
            raise TaskReferenceError(f"task {text!r}: {where or module.__name__} has no {attr!r}{hint}")
        obj = getattr(obj, part)
    if isinstance(obj, Task):
        return obj
    if isinstance(obj, type) and not issubclass(obj, Task):
        raise TaskReferenceError(f"task {text!r}: {attr} is a class but not a tasks.Task (subclass "
                                 "tasks.common.adapter.HostTask or tasks.Task)")
    if not callable(obj):
        raise TaskReferenceError(f"task {text!r}: {attr} is a {type(obj).__name__}, not a tasks.Task")
    try:
        task = obj()
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        what = "" if isinstance(obj, type) else f"{attr}() did not make a task: "
        raise TaskReferenceError(f"task {text!r}: {what}{exc}") from None
    if not isinstance(task, Task):
        raise TaskReferenceError(f"task {text!r}: {attr}() gave a {type(task).__name__}, not a tasks.Task")
    return task
