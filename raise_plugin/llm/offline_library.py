"""Task knowledge of the offline sampler: preambles, feature terms, seed programs and hints.

Every program the offline sampler writes has one shape: a fixed, task-specific
preamble that names the columns, then ``score = np.zeros(n)``, then one line
``score += c * (feature)`` per term, then a guarded return. The features below are
the building blocks the sampler inserts, deletes and swaps; the seeds are the
classical baselines (SPEC 3) and variations of them. Tasks are recognised from the
parameter names of the function to implement.

Any other task may declare its own library (``Task.offline_library``, a plain mapping:
see ``declared_library``); a task without one still lends the sampler its template
program, which the generic path varies.
"""
from __future__ import annotations

import ast
import logging
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Feature", "TaskLibrary", "TaskTemplate", "LIBRARIES", "library_for_params", "library_for_task",
           "template_for", "declared_library", "GENERIC_HINTS", "DEFAULT_FINISH"]

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


OBP = TaskLibrary(
    task="obp",
    params=("item", "bins"),
    preamble=(
        "bins = np.asarray({p1}, dtype=float)",
        "item = float({p0})",
        "n = bins.shape[0]",
        "cap = max(float(np.max(bins, initial=0.0)), 1e-09)",
        "gap = (bins - item) / cap",
    ),
    features=(
        Feature("leftover gap (best fit)", "gap", -1.0, 1.0),
        Feature("squared leftover gap", "gap ** 2", -1.0, 1.0),
        Feature("square-root leftover gap", "np.sqrt(np.maximum(gap, 0.0))", -1.0, 1.0),
        Feature("exact-fit bonus", "gap < 1e-09", 1.0, 1.0),
        Feature("small unusable leftover", "(gap > 1e-09) & (gap < 0.05)", -1.0, 0.3),
        Feature("near-fit closeness", "np.exp(-gap / 0.05)", 1.0, 0.5),
        Feature("fill ratio of the bin", "item / np.maximum(bins, 1e-09)", 1.0, 0.5),
        Feature("empty-bin flag", "bins >= cap", -1.0, 0.3),
        Feature("bin age (first fit)", "np.arange(n) / max(n, 1)", -1.0, 0.01),
        Feature("log leftover gap", "np.log1p(gap / 0.02)", -1.0, 0.2),
        Feature("distance to a target leftover", "np.abs(gap - 0.1)", -1.0, 0.5),
        Feature("item-weighted leftover", "item / cap * gap", -1.0, 2.0),
        Feature("leftover smaller than the item", "gap < item / cap", -1.0, 0.2),
        Feature("leftover relative to the item", "gap / (item / cap + 0.01)", -1.0, 0.05),
    ),
    seeds=(
        ("BestFit", ((-1.0, "gap"),)),
        ("FirstFit", ()),
        ("WorstFit", ((1.0, "gap"),)),
        ("BestFit with an exact-fit bonus", ((-1.0, "gap"), (1.0, "gap < 1e-09"))),
        ("BestFit avoiding small unusable leftovers", ((-1.0, "gap"), (-0.3, "(gap > 1e-09) & (gap < 0.05)"))),
        ("near-fit closeness", ((1.0, "np.exp(-gap / 0.05)"), (-0.01, "np.arange(n) / max(n, 1)"))),
        ("fill ratio", ((1.0, "item / np.maximum(bins, 1e-09)"),)),
        ("square-root BestFit", ((-1.0, "np.sqrt(np.maximum(gap, 0.0))"),)),
        ("target leftover", ((-1.0, "np.abs(gap - 0.1)"), (-0.5, "gap"))),
    ),
    hints=(
        "Prefer tight fits, but penalise leftovers too small for any later item.",
        "Reward exact fits strongly; break ties toward older bins.",
        "Scale the leftover by the bin capacity so terms stay comparable.",
        "Avoid opening empty bins while a used bin can take the item.",
        "Let large items seek tight bins and small items fill nearly full ones.",
    ),
)

OJSP = TaskLibrary(
    task="ojsp",
    params=("current_time", "candidate_operations"),
    preamble=(
        "ops = np.asarray({p1}, dtype=float).reshape(-1, 6)",
        "t = float({p0})",
        "n = ops.shape[0]",
        "dur = ops[:, 1]",
        "release = ops[:, 2]",
        "due = ops[:, 3]",
        "work = ops[:, 4]",
        "left = ops[:, 5]",
        "unit = max(float(np.max(work, initial=0.0)), 1.0)",
        "slack = (due - t - work) / unit",
    ),
    features=(
        Feature("operation duration (SPT)", "dur / unit", -1.0, 1.0),
        Feature("remaining work (MWKR)", "work / unit", 1.0, 1.0),
        Feature("remaining operations", "left / max(float(np.max(left, initial=0.0)), 1.0)", 1.0, 0.5),
        Feature("slack", "slack", -1.0, 1.0),
        Feature("time to due date (EDD)", "(due - t) / unit", -1.0, 1.0),
        Feature("waiting time since release", "(t - release) / unit", 1.0, 0.5),
        Feature("operation share of the remaining work", "dur / np.maximum(work, 1.0)", -1.0, 0.5),
        Feature("mean remaining operation length", "work / np.maximum(left, 1.0) / unit", 1.0, 0.5),
        Feature("lateness", "np.maximum(-slack, 0.0)", 1.0, 1.0),
        Feature("long-operation flag", "dur > 0.5 * np.max(dur, initial=0.0)", -1.0, 0.2),
    ),
    seeds=(
        ("SPT", ((-1.0, "dur / unit"),)),
        ("MinSlack", ((-1.0, "slack"),)),
        ("EDD", ((-1.0, "(due - t) / unit"),)),
        ("MWKR", ((1.0, "work / unit"),)),
        ("most operations remaining", ((1.0, "left / max(float(np.max(left, initial=0.0)), 1.0)"),)),
        ("SPT with remaining work", ((-1.0, "dur / unit"), (0.5, "work / unit"))),
        ("FIFO by release", ((1.0, "(t - release) / unit"),)),
        ("slack with lateness urgency", ((-0.5, "slack"), (1.0, "np.maximum(-slack, 0.0)"))),
    ),
    hints=(
        "Favour jobs with much remaining work to keep the critical path moving.",
        "Combine short operations with remaining work; pure SPT starves long jobs.",
        "Normalise times by the largest remaining work so weights are comparable.",
        "Use slack only as a tie-breaker; makespan depends on the longest job.",
    ),
)

OVRP = TaskLibrary(
    task="ovrp",
    params=("customer_features", "candidate_insertions"),
    preamble=(
        "cust = np.asarray({p0}, dtype=float).ravel()",
        "cand = np.asarray({p1}, dtype=float).reshape(-1, 8)",
        "n = cand.shape[0]",
        "demand = float(cust[2]) if cust.size > 2 else 0.0",
        "progress = float(cust[4]) if cust.size > 4 else 0.0",
        "delta = cand[:, 2]",
        "resid = cand[:, 3]",
        "load = cand[:, 4]",
        "size = cand[:, 5]",
        "near = cand[:, 6]",
        "proj = cand[:, 7]",
    ),
    features=(
        Feature("insertion cost", "delta", -1.0, 1.0),
        Feature("insertion cost per residual slack (SP)", "delta / (resid + 0.05)", -1.0, 0.2),
        Feature("urgency-weighted insertion cost (UW)", "delta * (1 + demand / np.maximum(1 - load, 0.05))",
                -1.0, 1.0),
        Feature("residual capacity", "resid", 1.0, 0.2),
        Feature("route load", "load", 1.0, 0.2),
        Feature("load imbalance", "np.abs(load - 0.5)", -1.0, 0.2),
        Feature("route size", "size", -1.0, 0.5),
        Feature("distance to the nearest stop", "near", -1.0, 0.5),
        Feature("projected route length", "proj", -1.0, 0.2),
        Feature("late insertion cost", "progress * delta", -1.0, 1.0),
        Feature("early residual capacity", "(1 - progress) * resid", 1.0, 0.2),
        Feature("demand-weighted residual", "demand * resid", 1.0, 0.5),
        Feature("nearly full route", "resid < 0.1", -1.0, 0.1),
    ),
    seeds=(
        ("cheapest insertion", ((-1.0, "delta"),)),
        ("SP-Insert", ((-1.0, "delta / (resid + 0.05)"),)),
        ("UW-Insert", ((-1.0, "delta * (1 + demand / np.maximum(1 - load, 0.05))"),)),
        ("NF-Insert", ((10.0, "resid"), (-1.0, "delta"))),
        ("cheapest insertion near a stop", ((-1.0, "delta"), (-0.5, "near"))),
        ("cheapest insertion with route balance", ((-1.0, "delta"), (-0.2, "np.abs(load - 0.5)"))),
        ("progress-weighted cost", ((-1.0, "progress * delta"), (0.2, "(1 - progress) * resid"))),
    ),
    hints=(
        "Divide insertion cost by the residual slack to keep room for later customers.",
        "Weight travel cost more as progress grows; early on, preserve capacity.",
        "Penalise routes that become nearly full after the insertion.",
        "Prefer positions close to an existing stop of the route.",
    ),
)

LIBRARIES: dict[str, TaskLibrary] = {lib.task: lib for lib in (OBP, OJSP, OVRP)}

GENERIC_HINTS = (
    "Keep the scoring simple and normalise every term to a common scale.",
    "Combine the strongest single rule with a small corrective term.",
)


def library_for_params(params: list[str] | tuple[str, ...], *, declared: bool = True) -> TaskLibrary | None:
    """The library of the task whose heuristic takes exactly these parameter names, if any:
    the built-in ones first, then (with ``declared``) those the registered tasks declare."""
    for lib in LIBRARIES.values():
        if tuple(params) == lib.params:
            return lib
    if declared:
        for known in _registered().values():
            if isinstance(known, TaskLibrary) and known.params == tuple(params):
                return known
    return None


def library_for_task(name: str) -> TaskLibrary | None:
    """The library of the task registered as ``name`` (built-in or declared), if any."""
    if name in LIBRARIES:
        return LIBRARIES[name]
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


def _knowledge(name: str) -> TaskLibrary | TaskTemplate | None:
    """What the registered task ``name`` (not a built-in) lends the sampler; read once."""
    if name not in _KNOWN:
        from tasks import get_task
        try:
            task = get_task(name)
            function, params, source = _template_function(task.template_program)
            declaration = getattr(task, "offline_library", None)
            _KNOWN[name] = (declared_library(task.name, task.template_program, declaration) if declaration
                            else TaskTemplate(task.name, function, params, source))
        except (ImportError, KeyError, TypeError, ValueError, AttributeError, SyntaxError) as exc:
            log.warning("offline sampler: task %s lends no knowledge (%s: %s)", name, type(exc).__name__, exc)
            _KNOWN[name] = None
    return _KNOWN[name]


def _registered() -> dict[str, TaskLibrary | TaskTemplate]:
    from tasks import list_tasks
    found = {}
    for name in list_tasks():
        if name not in LIBRARIES:
            known = _knowledge(name)
            if known is not None:
                found[name] = known
    return found
