"""GP's trees as Python: a tree simplified (constant folding, ``x - x``, ``x * 1``, ...) and rendered
to the body of the template's function; equal simplified trees render to equal source."""
from __future__ import annotations

import numpy as np

from .gp_trees import DIVISION_GUARD, OPERATORS, Node, Signature, float_source

__all__ = ["simplify", "is_vector", "features_in", "render_expr", "render_body"]


def _is(node: Node, value: float) -> bool:
    return node[0] == "c" and node[1] == value


def _fold(op: str, values: list[float]) -> Node:
    with np.errstate(all="ignore"):
        value = float(np.nan_to_num(OPERATORS[op][1](*values)))
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
            cast = f.source if f.derived else float_source(f)
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
