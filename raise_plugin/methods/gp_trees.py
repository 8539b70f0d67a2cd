"""GP's trees: a task's features, the typed primitive set (DEAP), simplification and rendering to Python source.

A tree is a DEAP ``PrimitiveTree`` over two types: ``Vector`` (one value per candidate: a bin,
an operation, an insertion) and ``float`` (one value per decision: the item, the time, a
column of a fixed-length argument, a constant). The root is a ``Vector``, so every tree
scores the candidates. A tree is simplified (constant folding, ``x - x``, ``x * 1``, ...)
and rendered to the body of the template's function; equal simplified trees render to
equal source.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import UserError

try:  # an optional extra (``pip install raise-plugin[gp]``); only the gp method needs it
    from deap import gp as deap_gp
except ImportError:  # pragma: no cover - exercised only without the extra
    deap_gp = None

__all__ = ["Vector", "Feature", "Signature", "TemplateError", "probe_signature", "primitive_set", "to_node", "simplify",
           "render_body", "render_expr", "is_vector", "require_deap", "DIVISION_GUARD"]

DIVISION_GUARD = 1e-9  # protected division: a denominator within this of 0 is replaced by 1


class TemplateError(UserError, ValueError):
    """A template GP cannot evolve (one line, naming what is wrong)."""


class Vector:
    """DEAP type of a value per candidate (a numpy array of the candidates' length)."""


def require_deap() -> None:
    if deap_gp is None:
        raise UserError("the gp method needs DEAP: pip install 'raise-plugin[gp]' (or pip install deap)")


# --------------------------------------------------------------------------- features
@dataclass(frozen=True)
class Feature:
    """A terminal of the trees: ``name`` in trees and rendered code, ``source`` its expression in
    the function's arguments, ``vector`` whether it holds one value per candidate."""

    name: str
    source: str
    vector: bool
    derived: bool = False  # computed from other features: ``source`` is already cast to floats


@dataclass(frozen=True)
class Signature:
    """What GP reads from a task's template: the function, its arguments, the features, and the
    argument whose length is the number of candidates."""

    function: str
    arguments: tuple[str, ...]
    features: tuple[Feature, ...]
    rows: str

    @property
    def vectors(self) -> frozenset[str]:
        """The names of the per-candidate features."""
        return frozenset(f.name for f in self.features if f.vector)


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
    reserved = set(_OPS) | set(arguments) | {"np", "score"}
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
    return tuple(Feature(f"{v.name}_minus_{s.name}", f"{_cast(v)} - {_cast(s)}", True, True)
                 for v in vectors for s in scalars)


def _cast(feature: Feature) -> str:
    return f"np.asarray({feature.source}, dtype=float)" if feature.vector else f"float({feature.source})"


# --------------------------------------------------------------------------- primitives
def _pdiv(a, b):
    """Protected division: ``a / b``, the denominator replaced by 1 where ``|b| <= 1e-9``."""
    return a / np.where(np.abs(b) > DIVISION_GUARD, b, 1.0)


def _ifgt(a, b, c, d):
    return np.where(a > b, c, d)


# base name -> (arity, numpy function); the numpy function folds constants
_OPS: dict[str, tuple[int, Callable]] = {
    "add": (2, np.add), "sub": (2, np.subtract), "mul": (2, np.multiply), "div": (2, _pdiv),
    "max": (2, np.maximum), "min": (2, np.minimum),
    "neg": (1, np.negative), "abs": (1, np.abs), "sqrt": (1, lambda a: np.sqrt(np.abs(a))), "square": (1, np.square),
    "vmax": (1, np.max), "vmin": (1, np.min), "vmean": (1, np.mean),
    "ifgt": (4, _ifgt),
}
_COMMUTATIVE = {"add", "mul", "max", "min"}


def _constant(low: float, high: float) -> Callable[[], float]:
    """The ephemeral constants' draw: a random sign, a magnitude log-uniform in ``[low, high]``, two
    significant digits (DEAP calls it with Python's ``random``, swapped in by the method)."""
    import random

    def draw() -> float:
        sign = 1.0 if random.random() < 0.5 else -1.0
        return float(f"{sign * 10 ** random.uniform(np.log10(low), np.log10(high)):.2g}")
    return draw


_EPHEMERALS: dict[tuple[float, float], Callable[[], float]] = {}


def primitive_set(signature: Signature, constants: tuple[float, float] = (0.1, 100.0)):
    """The strongly typed primitive set: the features as arguments, the operators in every typing
    that keeps the root a ``Vector``, and ephemeral constants of magnitude in ``constants``."""
    require_deap()
    in_types = [Vector if f.vector else float for f in signature.features]
    pset = deap_gp.PrimitiveSetTyped(signature.function, in_types, Vector)
    pset.renameArguments(**{f"ARG{i}": f.name for i, f in enumerate(signature.features)})
    for name, (arity, fn) in _OPS.items():
        if name in ("vmax", "vmin", "vmean"):
            pset.addPrimitive(fn, [Vector], float, name)
        elif name == "ifgt":
            pset.addPrimitive(fn, [Vector] * 4, Vector, name)
            pset.addPrimitive(fn, [Vector, float, Vector, Vector], Vector, f"{name}_vs")
        elif arity == 1:
            pset.addPrimitive(fn, [Vector], Vector, name)
            pset.addPrimitive(fn, [float], float, f"{name}_s")
        else:
            pset.addPrimitive(fn, [Vector, Vector], Vector, name)
            pset.addPrimitive(fn, [Vector, float], Vector, f"{name}_vs")
            if name not in _COMMUTATIVE:
                pset.addPrimitive(fn, [float, Vector], Vector, f"{name}_sv")
            pset.addPrimitive(fn, [float, float], float, f"{name}_ss")
    # DEAP keys ephemerals by name across primitive sets: one name and one function per range
    low, high = float(constants[0]), float(constants[1])
    draw = _EPHEMERALS.setdefault((low, high), _constant(low, high))
    pset.addEphemeralConstant(f"const{list(_EPHEMERALS).index((low, high))}", draw, float)
    return pset


# --------------------------------------------------------------------------- nodes
# A simplified tree is a nested tuple: ("c", value) | ("x", feature name) | ("op", base name, children)
Node = tuple


def to_node(tree) -> Node:
    """The nested form of a DEAP prefix tree (typed primitive names reduced to their base name)."""
    def build(i: int) -> tuple[Node, int]:
        node = tree[i]
        if isinstance(node, deap_gp.Primitive):
            children, j = [], i + 1
            for _ in range(node.arity):
                child, j = build(j)
                children.append(child)
            return ("op", node.name.split("_")[0], tuple(children)), j
        if isinstance(node.value, str):
            return ("x", node.value), i + 1
        return ("c", float(node.value)), i + 1
    node, end = build(0)
    return node


def _is(node: Node, value: float) -> bool:
    return node[0] == "c" and node[1] == value


def _fold(op: str, values: list[float]) -> Node:
    with np.errstate(all="ignore"):
        value = float(np.nan_to_num(_OPS[op][1](*values)))
    return ("c", 0.0 if value == 0 else value)  # no -0.0: equal trees render to equal source


def simplify(node: Node, vectors: frozenset[str]) -> Node:
    """Constant folding and algebraic identities, bottom-up; the result computes the same scores.
    ``vectors``: the names of the vector features."""
    if node[0] != "op":
        return node
    op, args = node[1], tuple(simplify(a, vectors) for a in node[2])
    if all(a[0] == "c" for a in args):
        return _fold(op, [a[1] for a in args])
    zero = ("c", 0.0)
    if op == "add":
        a, b = args
        if _is(a, 0.0):
            return b
        if _is(b, 0.0):
            return a
    elif op == "sub":
        a, b = args
        if a == b:
            return zero
        if _is(b, 0.0):
            return a
        if _is(a, 0.0):
            return simplify(("op", "neg", (b,)), vectors)
    elif op == "mul":
        a, b = args
        if _is(a, 0.0) or _is(b, 0.0):
            return zero
        if _is(a, 1.0):
            return b
        if _is(b, 1.0):
            return a
        if _is(a, -1.0):
            return simplify(("op", "neg", (b,)), vectors)
        if _is(b, -1.0):
            return simplify(("op", "neg", (a,)), vectors)
    elif op == "div":
        a, b = args
        if _is(b, 1.0) or (b[0] == "c" and abs(b[1]) <= DIVISION_GUARD):
            return a
        if _is(a, 0.0):
            return zero
    elif op in ("max", "min"):
        if args[0] == args[1]:
            return args[0]
    elif op == "neg":
        (a,) = args
        if a[0] == "op" and a[1] == "neg":
            return a[2][0]
    elif op in ("abs", "sqrt", "square"):
        (a,) = args
        inner = a[1] if a[0] == "op" else None
        if inner == "neg" or (inner == "abs" and op != "abs"):  # the sign does not matter to op
            return simplify(("op", op, a[2]), vectors)
        if op == "abs" and inner in ("abs", "sqrt", "square"):
            return a
    elif op in ("vmax", "vmin", "vmean"):
        if not is_vector(args[0], vectors):
            return args[0]
    elif op == "ifgt":
        a, b, c, d = args
        if a == b:
            return d
        if c == d:
            return c
    return ("op", op, args)


def is_vector(node: Node, vectors: frozenset[str]) -> bool:
    """Whether ``node`` holds one value per candidate (a vector feature outside every aggregate)."""
    if node[0] == "x":
        return node[1] in vectors
    if node[0] == "c" or node[1] in ("vmax", "vmin", "vmean"):
        return False
    return any(is_vector(a, vectors) for a in node[2])


def features_in(node: Node) -> set[str]:
    if node[0] == "x":
        return {node[1]}
    if node[0] == "c":
        return set()
    return set().union(*(features_in(a) for a in node[2]))


def _const(value: float) -> str:
    text = f"{value:.6g}"
    return f"({text})" if value < 0 else text


def render_expr(node: Node) -> str:
    """Python/numpy source of a node; binary operators fully parenthesised."""
    if node[0] == "c":
        return _const(node[1])
    if node[0] == "x":
        return node[1]
    op, args = node[1], [render_expr(a) for a in node[2]]
    infix = {"add": "+", "sub": "-", "mul": "*"}
    if op in infix:
        return f"({args[0]} {infix[op]} {args[1]})"
    if op == "div" and node[2][1][0] == "c":  # a constant denominator: simplify keeps only safe ones
        return f"({args[0]} / {args[1]})"
    if op == "div":
        return f"({args[0]} / np.where(np.abs({args[1]}) > {DIVISION_GUARD:g}, {args[1]}, 1.0))"
    calls = {"max": "np.maximum", "min": "np.minimum", "abs": "np.abs", "square": "np.square",
             "vmax": "np.max", "vmin": "np.min", "vmean": "np.mean"}
    if op in calls:
        return f"{calls[op]}({', '.join(args)})"
    if op == "neg":
        return f"(-{args[0]})"
    if op == "sqrt":
        return f"np.sqrt(np.abs({args[0]}))"
    if op == "ifgt":
        return f"np.where({args[0]} > {args[1]}, {args[2]}, {args[3]})"
    raise ValueError(f"unknown primitive {op!r}")


def render_body(node: Node, signature: Signature) -> str:
    """The function body computing the simplified tree ``node``: the features it uses as floats,
    the scores under ``np.errstate`` (overflow is not an error), NaN and infinities made finite."""
    vectors = signature.vectors
    used = features_in(node)
    lines = []
    for f in signature.features:
        if f.name in used:
            cast = f.source if f.derived else _cast(f)
            lines.append(f"    {f.name} = {cast}")
    expr = render_expr(node)
    if expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        expr = expr[1:-1]
    lines.append("    with np.errstate(all=\"ignore\"):")
    lines.append(f"        score = {expr}")
    if is_vector(node, vectors):
        lines.append("    return np.nan_to_num(score)")
    else:
        lines.append(f"    return np.full(len({signature.rows}), np.nan_to_num(score), dtype=float)")
    return "\n".join(lines) + "\n"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0
