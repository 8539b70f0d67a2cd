"""Programs as the offline sampler writes them: weighted feature terms after a task's preamble, read
back from a prompt and rendered again, and the tunable numeric constants of any program."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from .offline_library import TaskLibrary

__all__ = ["TermProgram", "read_terms", "render", "split_term", "shape_key", "normalised", "rounded",
           "without_docstring", "TunableConstants", "perturb_constants"]


def normalised(expr: str) -> str:
    return ast.unparse(ast.parse(expr, mode="eval"))


def shape_key(expr: str) -> str:
    """The expression with its numbers blanked: a perturbed feature keeps its name."""
    return re.sub(r"(?<![\w.])\d+(\.\d*)?(e-?\d+)?", "#", normalised(expr))


def rounded(x: float) -> float:
    return float(f"{x:.4g}")


@dataclass
class TermProgram:
    """``score = sum_k coef_k * expr_k`` after the task's preamble."""

    terms: list[tuple[float, str]]

    def key(self) -> tuple:
        return tuple((c, normalised(e)) for c, e in self.terms)


def split_term(node: ast.expr) -> tuple[float, str] | None:
    """``c * (expr)`` -> (c, expr); None for any other shape."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        coef = number_of(node.left)
        if coef is not None:
            return coef, ast.unparse(node.right)
    return None


def number_of(node: ast.expr) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = number_of(node.operand)
        return None if inner is None else -inner
    return None


def without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def preamble_lines(lib: TaskLibrary, params: list[str]) -> list[str]:
    names = {f"p{i}": p for i, p in enumerate(params)}
    return [line.format(**names) for line in lib.preamble]


def read_terms(source: str, lib: TaskLibrary, params: list[str]) -> TermProgram | None:
    """The terms of a program in the sampler's shape, or of a one-line ``return expr``
    over the parameters (read as one term); None for anything else."""
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(node, ast.FunctionDef):
        return None
    body = without_docstring(node.body)
    pre = [ast.dump(ast.parse(line).body[0]) for line in preamble_lines(lib, params)]
    tail = len(lib.finish)
    if len(body) >= len(pre) + 1 + tail and [ast.dump(s) for s in body[: len(pre)]] == pre:
        rest = body[len(pre):]
        if ast.unparse(rest[0]) == "score = np.zeros(n)" and isinstance(rest[-1], ast.Return):
            terms = []
            for stmt in rest[1:len(rest) - tail]:
                if not (isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)
                        and isinstance(stmt.target, ast.Name) and stmt.target.id == "score"):
                    return None
                term = split_term(stmt.value)
                if term is None:
                    return None
                terms.append(term)
            return TermProgram(terms)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        names = {n.id for n in ast.walk(body[0].value) if isinstance(n, ast.Name)}
        # the preamble rebinds the parameters to float arrays of the same values
        if names <= set(params) | {"np"}:
            return TermProgram([(1.0, ast.unparse(body[0].value))])
    return None


def render(header: str, lib: TaskLibrary, params: list[str], program: TermProgram) -> str:
    lines = [header]
    lines += ["    " + line for line in preamble_lines(lib, params)]
    lines.append("    score = np.zeros(n)")
    for coef, expr in program.terms:
        lines.append(f"    score += {rounded(coef)!r} * ({normalised(expr)})")
    lines += ["    " + line for line in lib.finish]
    return "\n".join(lines)


class TunableConstants(ast.NodeVisitor):
    """Numeric constants worth tuning: not indices, keyword arguments, or 0 and 1 in integer form."""

    def __init__(self):
        self.found: list[ast.Constant] = []

    def visit_Subscript(self, node):
        self.visit(node.value)  # never the index

    def visit_keyword(self, node):
        pass

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return
        if isinstance(v, int) and v in (0, 1):
            return
        if abs(v) < 1e-6:  # zeros and epsilons guard divisions, they are not parameters
            return
        self.found.append(node)


def perturb_constants(tree: ast.AST, rng: np.random.Generator, k_max: int = 3) -> int:
    """Multiply 1..k_max tunable constants of ``tree`` by log-normal factors, in place."""
    visitor = TunableConstants()
    visitor.visit(tree)
    if not visitor.found:
        return 0
    k = int(rng.integers(1, min(k_max, len(visitor.found)) + 1))
    for idx in rng.choice(len(visitor.found), size=k, replace=False):
        node = visitor.found[int(idx)]
        factor = float(np.exp(rng.normal(0.0, 0.45)))
        if isinstance(node.value, int):
            new = int(round(node.value * factor))
            node.value = new if new != node.value else node.value + (1 if factor >= 1 else -1)
        else:
            node.value = rounded(node.value * factor)
    return k
