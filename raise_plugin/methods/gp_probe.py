"""What GP reads from a task's template: its function, its arguments and the features they hold,
probed from the arguments the task's first baseline receives (``probe_signature``)."""
from __future__ import annotations

import ast
import re

import numpy as np

from .gp_trees import OPERATORS, Feature, Signature, TemplateError, float_source

__all__ = ["probe_signature", "MAX_DIFFERENCES"]


class _ProbeDone(BaseException):
    """Ends a probe run early; a ``BaseException`` so the task's checks of the heuristic pass it on."""


class _NotScores(BaseException):
    """The template's function does not return one score per candidate (passed on as ``_ProbeDone``)."""


def _template_function(template: str) -> ast.FunctionDef:
    tree = ast.parse(template)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(funcs) != 1:
        raise TemplateError(f"gp: the template must define exactly one function, found {len(funcs)}")
    return funcs[0]


def _column_names(docstring: str, argument: str, count: int) -> list[str] | None:
    """Column names of ``argument`` from the template's docstring (lines like ``1 duration: ...`` or
    ``[2] delta_distance: ...`` in the lines after ``argument:``), or ``None`` when not all are named."""
    lines = docstring.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(f"{argument}:")), None)
    if start is None:
        return None
    names: dict[int, str] = {}
    for line in lines[start + 1:]:
        found = re.match(r"\s*\[?(\d+)\]?\s+([A-Za-z_]\w*)\s*:", line)
        if found:
            names.setdefault(int(found.group(1)), found.group(2))
        elif re.match(r"\s*[A-Za-z_]\w*\s*:", line) and names:
            break  # the next argument
    if sorted(names) != list(range(count)):
        return None
    return [names[i] for i in range(count)]


def probe_signature(task, calls: int = 20) -> Signature:
    """The features of ``task``'s template, from its signature and the arguments its first baseline
    receives on the first nominal instance (the task's own code, run in this process).

    An argument is a scalar feature when it is a number; a per-candidate feature when it is a 1-D
    array as long as the scores; ``k`` column features when it is an ``(n, k)`` array; ``L``
    scalar features when it is a 1-D array of a fixed length ``L`` that is not the scores'.
    Refused (``TemplateError``, one line): a template whose function does not return one score per candidate.
    """
    func = _template_function(task.template_program)
    arguments = tuple(a.arg for a in func.args.args)
    docstring = ast.get_docstring(func) or ""
    if not task.baselines:
        raise TemplateError(f"gp: task {task.name!r} has no baseline to probe its template's arguments with")
    baseline = next(iter(task.baselines.values()))
    seen: list[tuple[tuple, int]] = []

    def probe(*args):
        out = baseline(*args)
        if not (isinstance(out, np.ndarray) and out.ndim == 1):
            raise _NotScores(f"gp evolves functions that return one score per candidate; in task {task.name!r}, "
                             f"{func.name} returns {type(out).__name__}")
        seen.append((tuple(np.asarray(a) for a in args), len(out)))
        if len(seen) >= calls:
            raise _ProbeDone()
        return out

    try:
        task.evaluate(probe, task.nominal_instances()[0])
    except _ProbeDone:
        pass
    except _NotScores as exc:
        raise TemplateError(str(exc)) from None
    except Exception as exc:
        if not seen:
            raise TemplateError(f"gp could not probe {task.name!r}'s template: {type(exc).__name__}: {exc}") from None
    if not seen:
        raise TemplateError(f"gp: task {task.name!r} never called its heuristic on its first nominal instance")
    if len(arguments) != len(seen[0][0]):
        raise TemplateError(f"gp: {func.name} takes {len(arguments)} arguments but is called with {len(seen[0][0])}")
    features: list[Feature] = []
    rows = None
    for i, name in enumerate(arguments):
        values = [args[i] for args, _ in seen]
        counts = [n for _, n in seen]
        ndim = values[0].ndim
        if any(v.ndim != ndim for v in values):
            raise TemplateError(f"gp: argument {name!r} changes its number of dimensions between calls")
        if ndim == 0:
            features.append(Feature(name, name, False))
        elif ndim == 1 and all(len(v) == n for v, n in zip(values, counts)):
            features.append(Feature(name, name, True))
            rows = rows or name
        elif ndim == 1 and len({len(v) for v in values}) == 1:
            width = len(values[0])
            labels = _column_names(docstring, name, width) or [f"{name}_{j}" for j in range(width)]
            features.extend(Feature(label, f"{name}[{j}]", False) for j, label in enumerate(labels))
        elif ndim == 2 and all(v.shape[0] == n for v, n in zip(values, counts)) \
                and len({v.shape[1] for v in values}) == 1:
            width = values[0].shape[1]
            labels = _column_names(docstring, name, width) or [f"{name}_{j}" for j in range(width)]
            features.extend(Feature(label, f"{name}[:, {j}]", True) for j, label in enumerate(labels))
            rows = rows or name
        else:
            raise TemplateError(f"gp: argument {name!r} is neither a number, nor one value or one row per "
                             "candidate, nor of a fixed length")
    if rows is None:
        raise TemplateError(f"gp: no argument of {func.name} has one value per candidate")
    reserved = set(OPERATORS) | set(arguments) | {"np", "score"}
    named = []
    for f in features:
        name = f.name if f.name == f.source or f.name not in reserved else f"{f.name}_"
        named.append(Feature(name, f.source, f.vector))
    if len({f.name for f in named}) != len(named):
        named = [Feature(f"x{j}", f.source, f.vector) for j, f in enumerate(named)]
    return Signature(func.name, arguments, tuple(named) + _differences(named), rows)


MAX_DIFFERENCES = 8


def _differences(features: list[Feature]) -> tuple[Feature, ...]:
    """``vector - scalar`` for every pair of a per-candidate and a scalar feature, when there are at
    most ``MAX_DIFFERENCES`` pairs: the leftover of a bin after the item, the slack of a due date at
    the current time. A search of a thousand samples rarely builds them from ``sub``."""
    vectors = [f for f in features if f.vector]
    scalars = [f for f in features if not f.vector]
    if not vectors or not scalars or len(vectors) * len(scalars) > MAX_DIFFERENCES:
        return ()
    return tuple(Feature(f"{v.name}_minus_{s.name}", f"{float_source(v)} - {float_source(s)}", True, True)
                 for v in vectors for s in scalars)
