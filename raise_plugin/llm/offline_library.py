"""Task knowledge of the offline sampler: libraries (preambles, feature terms, seed programs and hints)
and templates, each lent by a task.

Every program the offline sampler writes has one shape: a fixed, task-specific
preamble that names the columns, then ``score = np.zeros(n)``, then one line
``score += c * (feature)`` per term, then a guarded return. A library's features are
the building blocks the sampler inserts, deletes and swaps; its seeds are the
classical baselines (SPEC 3) and variations of them.

Each task declares its own library (``Task.offline_library``, a plain mapping: see
``declared_library``; the built-in tasks keep theirs in ``tasks/<task>/offline.py``); a
task without one still lends the sampler its template program, which the generic path
varies. A task is found by name, or by the parameter names of the function to implement.
"""
from __future__ import annotations

import ast
import logging
from dataclasses import dataclass
from typing import Any, Mapping

from tasks import Task, get_task, list_tasks

__all__ = ["Feature", "TaskLibrary", "TaskTemplate", "library_for_params", "library_for_task", "template_for",
           "knowledge_of", "declared_library", "GENERIC_HINTS", "DEFAULT_FINISH"]

log = logging.getLogger("raise_plugin.llm")

DEFAULT_FINISH = ("return np.nan_to_num(score, nan=-1e9, posinf=1e9, neginf=-1e9)",)


@dataclass(frozen=True)
class Feature:
    """One term ``c * (expr)``; ``sign`` and ``scale`` give the usual coefficient."""

    name: str
    expr: str
    sign: float = 1.0
    scale: float = 1.0


@dataclass(frozen=True)
class TaskLibrary:
    task: str
    params: tuple[str, ...]          # parameter names that identify the task, in order
    preamble: tuple[str, ...]        # body lines before the score; {p0}, {p1} = parameter names
    features: tuple[Feature, ...]
    seeds: tuple[tuple[str, tuple[tuple[float, str], ...]], ...]   # (name, ((coef, expr), ...))
    hints: tuple[str, ...]
    function: str = "priority"       # the name of the function to implement
    finish: tuple[str, ...] = DEFAULT_FINISH  # body lines after the terms; the last one returns


@dataclass(frozen=True)
class TaskTemplate:
    """What the generic path knows of a task without a library: its template function."""

    task: str
    function: str
    params: tuple[str, ...]
    source: str                      # the template function, with its body


GENERIC_HINTS = (
    "Keep the scoring simple and normalise every term to a common scale.",
    "Combine the strongest single rule with a small corrective term.",
)


def library_for_params(params: list[str] | tuple[str, ...]) -> TaskLibrary | None:
    """The library of the registered task whose heuristic takes exactly these parameter names, if any."""
    for known in _registered().values():
        if isinstance(known, TaskLibrary) and known.params == tuple(params):
            return known
    return None


def library_for_task(name: str) -> TaskLibrary | None:
    """The library the task registered as ``name`` declares, if any."""
    known = _knowledge(name)
    return known if isinstance(known, TaskLibrary) else None


def template_for(params: list[str] | tuple[str, ...], task: str | None = None) -> TaskTemplate | None:
    """The template of ``task`` (when it has no library), else of the registered task without a
    library whose heuristic takes these parameter names."""
    if task is not None:
        known = _knowledge(task)
        return known if isinstance(known, TaskTemplate) else None
    for known in _registered().values():
        if isinstance(known, TaskTemplate) and known.params == tuple(params):
            return known
    return None


def declared_library(task: str, template_program: str, declaration: Mapping[str, Any]) -> TaskLibrary:
    """A library from a task's declaration: a mapping with ``preamble`` (body lines; ``{p0}``,
    ``{p1}``, ... are the parameter names), ``features`` (``(name, expr, sign, scale)`` rows),
    ``seeds`` (``(name, ((coef, expr), ...))`` rows), ``finish`` (the lines after the terms,
    turning ``score`` into the heuristic's answer; the last one returns) and ``hints``. The
    function's name and parameters are read from the task's template program."""
    function, params, _ = _template_function(template_program)
    unknown = set(declaration) - {"preamble", "features", "seeds", "finish", "hints"}
    if unknown:
        raise ValueError(f"{task}: offline library has unknown fields {', '.join(sorted(unknown))}")
    return TaskLibrary(
        task=task, params=params, function=function,
        preamble=tuple(declaration["preamble"]),
        features=tuple(Feature(*row) for row in declaration["features"]),
        seeds=tuple((name, tuple((float(c), e) for c, e in terms)) for name, terms in declaration["seeds"]),
        hints=tuple(declaration.get("hints", GENERIC_HINTS)),
        finish=tuple(declaration.get("finish", DEFAULT_FINISH)))


def _template_function(template_program: str) -> tuple[str, tuple[str, ...], str]:
    """(name, parameter names, source) of the first function of a template program."""
    tree = ast.parse(template_program)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            params = tuple(a.arg for a in node.args.posonlyargs + node.args.args)
            return node.name, params, ast.get_source_segment(template_program, node) or ast.unparse(node)
    raise ValueError("the template program defines no function")


_KNOWN: dict[str, TaskLibrary | TaskTemplate | None] = {}


def knowledge_of(task: Task) -> TaskLibrary | TaskTemplate | None:
    """What ``task`` lends the sampler: its library, else its template (``None``: neither can be read)."""
    try:
        function, params, source = _template_function(task.template_program)
        declaration = getattr(task, "offline_library", None)
        return (declared_library(task.name, task.template_program, declaration) if declaration
                else TaskTemplate(task.name, function, params, source))
    except (TypeError, ValueError, AttributeError, SyntaxError) as exc:
        log.warning("offline sampler: task %s lends no knowledge (%s: %s)", task.name, type(exc).__name__, exc)
        return None


def _knowledge(name: str) -> TaskLibrary | TaskTemplate | None:
    """What the registered task ``name`` lends the sampler (``knowledge_of``); read once."""
    if name not in _KNOWN:
        try:
            _KNOWN[name] = knowledge_of(get_task(name))
        except (ImportError, KeyError, TypeError, ValueError) as exc:
            log.warning("offline sampler: task %s lends no knowledge (%s: %s)", name, type(exc).__name__, exc)
            _KNOWN[name] = None
    return _KNOWN[name]


def _registered() -> dict[str, TaskLibrary | TaskTemplate]:
    found = {}
    for name in list_tasks():
        known = _knowledge(name)
        if known is not None:
            found[name] = known
    return found
