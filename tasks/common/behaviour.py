"""What a declared task's code gives, tried once when the task is loaded by reference, and the one line
that names the part of a task whose own code failed."""
from __future__ import annotations

import ast
import math
import numbers
import re
from typing import Callable

import numpy as np

from .errors import HeuristicError, one_line

__all__ = ["check_behaviour", "check_name", "check_metric", "raising_part", "NAME_RULE"]

# what a task's name may hold: it is a registry key, a file and folder name, and never a file or module reference
NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def check_behaviour(task) -> None:
    """A name that is a name, a template that parses into a function, baselines (at least one) that are
    functions, a nominal set of at least one instance (a dict), on each of them shift values that are whole
    numbers in ``[shift.low, high]``, validation and test suites that build, and on the first nominal
    instance a finite metric for every baseline. Else a ``ValueError`` naming the part at fault and what
    it gave or raised."""
    who = type(task).__name__
    check_name(task)
    try:
        tree = ast.parse(str(task.template_program))
    except (SyntaxError, ValueError) as exc:  # ValueError: null bytes
        line = f"line {exc.lineno}: " if getattr(exc, "lineno", None) is not None else ""
        raise ValueError(f"{who}.template_program does not parse: {line}{getattr(exc, 'msg', exc)}") from None
    if not any(isinstance(node, ast.FunctionDef) for node in tree.body):
        raise ValueError(f"{who}.template_program defines no function")
    if not isinstance(task.baselines, dict):
        raise ValueError(f"{who}.baselines: a {type(task.baselines).__name__}, not a dict of name -> function")
    if not task.baselines:
        raise ValueError(f"{who}.baselines is empty: give at least one (name -> function)")
    for rule_name, rule in task.baselines.items():
        if not callable(rule):
            raise ValueError(f"{who}.baselines[{rule_name!r}] is {type(rule).__name__} {rule!r}, not a function")
    nominal = _gives(task, "make_nominal", lambda: task.nominal_instances())
    if not nominal:
        raise ValueError(f"{who}.make_nominal gave no instance")
    for index, instance in enumerate(nominal):
        _check_shift_values(task, who, index, instance)
    for suite in ("validation", "test"):
        _gives(task, f"{suite}_suite", lambda: task.suite(suite), f" (building the {suite} suite)")
    for rule_name, rule in task.baselines.items():
        _check_baseline(task, who, rule_name, rule, nominal[0])


def check_name(task) -> None:
    """A ``ValueError`` unless ``task.name`` is a name (``NAME_RULE``): the registry's key, a file's and a
    folder's name, never read as a file or module reference."""
    name = getattr(task, "name", None)
    if not (isinstance(name, str) and NAME_RULE.fullmatch(name)):
        raise ValueError(f"{type(task).__name__}.name must be a non-empty string of letters, digits, '_', '-' and "
                         f"'.' (starting with a letter or digit), got {name!r}")


def check_metric(task, metric, doing: str) -> float:
    """``metric``, what ``task.evaluate`` gave (``doing`` says on what), as a float; a ``ValueError`` naming
    ``evaluate`` and what it gave where it is no real number (NaN and infinities are numbers here)."""
    kind = np.asarray(metric).dtype.kind if np.ndim(metric) == 0 else ""
    if kind not in ("i", "u", "f") and (isinstance(metric, bool) or not isinstance(metric, numbers.Real)):
        raise ValueError(f"{type(task).__name__}.evaluate gave {type(metric).__name__} {metric!r:.40} {doing}, "
                         "not a number")
    return float(metric)


def raising_part(task, exc: BaseException, default: str) -> str:
    """The method of ``task`` in which ``exc`` was raised (the innermost of its frames that runs one of
    the task class's methods), else ``default``."""
    codes = {}
    for attr in dir(type(task)):
        code = getattr(getattr(type(task), attr, None), "__code__", None)
        if code is not None:
            codes[code] = attr
    part, tb = default, exc.__traceback__
    while tb is not None:
        part = codes.get(tb.tb_frame.f_code, part)
        tb = tb.tb_next
    return part


def _check_shift_values(task, who: str, index: int, instance) -> None:
    if not isinstance(instance, dict):
        raise ValueError(f"{who}.make_nominal gave {type(instance).__name__} {instance!r:.40} as instance "
                         f"{index}, not an instance (a dict)")
    given = _gives(task, "shift_values", lambda: task.shift_values(instance), f" (on nominal instance {index})")
    if not (isinstance(given, tuple) and len(given) == 2):
        raise ValueError(f"{who}.shift_values gave a {type(given).__name__}, not (values, high)")
    values, high = np.asarray(given[0]), given[1]
    if values.size == 0 or not np.issubdtype(values.dtype, np.number):
        raise ValueError(f"{who}.shift_values gave no numbers on nominal instance {index}")
    if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
        raise ValueError(f"{who}.shift_values gave values that are not whole numbers on nominal instance {index}")
    if values.min() < task.shift.low or values.max() > high:
        raise ValueError(f"{who}.shift_values gave values from {values.min():g} to {values.max():g} on nominal "
                         f"instance {index}, outside [shift.low, high] = [{task.shift.low}, {high}]")


def _check_baseline(task, who: str, rule_name: str, rule: Callable, instance) -> None:
    """The baseline's metric on ``instance``: a finite number, else a ``ValueError`` naming what failed."""
    where = f"baseline {rule_name!r} on nominal instance 0"
    try:
        metric = task.evaluate(rule, instance)
    except HeuristicError as exc:
        raise ValueError(f"{who}.baselines[{rule_name!r}] fails on nominal instance 0: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the task's own code: said in one line
        raise ValueError(f"{who}.{raising_part(task, exc, 'evaluate')} raised {type(exc).__name__}: "
                         f"{one_line(exc)} ({where})") from None
    if not math.isfinite(check_metric(task, metric, f"({where})")):
        raise ValueError(f"{who}.evaluate gave {metric!r} ({where}), not a finite number")


def _gives(task, part: str, call: Callable, doing: str = ""):
    """``call()``, or a ``ValueError`` naming the part of ``task`` that raised (``part`` where none of its
    methods is in the traceback) and what it raised, ``doing`` appended."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the task's own code: said in one line
        raise ValueError(f"{type(task).__name__}.{raising_part(task, exc, part)} raised {type(exc).__name__}: "
                         f"{one_line(exc)}{doing}") from None
