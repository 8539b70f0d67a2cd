"""The offline sampler's generic path: a program of a task without a library, varied as code."""
from __future__ import annotations

import ast

import numpy as np

from .offline_terms import TunableConstants, perturb_constants, rounded, without_docstring

__all__ = ["vary", "can_vary"]


class CodeEdits(ast.NodeVisitor):
    """Where a program can be varied without knowing its task: divisions (a shift of the
    numerator or denominator changes the ranking a ratio gives), subtractions (a weight on
    the subtrahend), both numeric wherever the original was, and loops (the order in which
    a first-found or tie-breaking rule meets the candidates)."""

    def __init__(self):
        self.divisions: list[ast.BinOp] = []
        self.subtractions: list[ast.BinOp] = []
        self.loops: list[ast.For] = []

    def visit_For(self, node):
        self.loops.append(node)
        self.generic_visit(node)

    def visit_Subscript(self, node):
        self.visit(node.value)  # never the index

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Div):
            self.divisions.append(node)
        elif isinstance(node.op, ast.Sub) and not isinstance(node.right, ast.Constant):
            self.subtractions.append(node)
        self.generic_visit(node)


def _edits_of(func: ast.AST) -> tuple[CodeEdits, list[str]]:
    """Where ``func`` can be varied, and the kinds of edit that it allows."""
    edits = CodeEdits()
    edits.visit(func)
    constants = TunableConstants()
    constants.visit(func)
    kinds = [k for k, there in (("constants", constants.found), ("division", edits.divisions),
                                ("subtraction", edits.subtractions), ("order", edits.loops)) if there]
    return edits, kinds


def can_vary(source: str) -> bool:
    """Whether ``vary`` can change the program ``source`` at all: it holds a numeric constant, a
    division, a subtraction or a loop (else every variant is the program itself)."""
    return bool(_edits_of(ast.parse(source))[1])


def vary(parent: str, name: str | None, rng: np.random.Generator) -> tuple[str, str]:
    """A variant of ``parent`` (one function): its constants retuned, a division shifted, a
    subtraction weighted or a loop reordered, one or two edits; with nothing to vary, the
    parent as it is."""
    tree = ast.parse(parent)
    func = tree.body[0]
    func.body = without_docstring(func.body) or [ast.Pass()]
    if name and isinstance(func, ast.FunctionDef):
        func.name = name
    done = []
    for _ in range(int(rng.integers(1, 3))):
        edits, kinds = _edits_of(func)
        if not kinds:
            break
        kind = kinds[int(rng.integers(len(kinds)))]
        if kind == "constants":
            perturb_constants(func, rng)
        elif kind == "division":
            node = edits.divisions[int(rng.integers(len(edits.divisions)))]
            shift = ast.Constant(rounded(float(np.exp(rng.uniform(np.log(0.05), np.log(20.0))))))
            side = "left" if rng.random() < 0.5 else "right"
            operand = getattr(node, side)
            if isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.Add) \
                    and isinstance(operand.right, ast.Constant):
                operand.right = shift  # shifted before: a new shift, not a second one
            else:
                setattr(node, side, ast.BinOp(operand, ast.Add(), shift))
        elif kind == "subtraction":
            node = edits.subtractions[int(rng.integers(len(edits.subtractions)))]
            weight = ast.Constant(rounded(float(np.exp(rng.normal(0.0, 0.5)))))
            node.right = ast.BinOp(weight, ast.Mult(), node.right)
        else:
            loop = edits.loops[int(rng.integers(len(edits.loops)))]
            it = loop.iter
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "sorted":
                flag = next((k for k in it.keywords if k.arg == "reverse"), None)
                if flag is None:
                    it.keywords.append(ast.keyword("reverse", ast.Constant(True)))
                else:
                    flag.value = ast.UnaryOp(ast.Not(), flag.value) if not isinstance(flag.value, ast.Constant) \
                        else ast.Constant(not flag.value.value)
            else:
                loop.iter = ast.Call(ast.Name("sorted", ast.Load()), [it],
                                     [ast.keyword("reverse", ast.Constant(bool(rng.random() < 0.5)))])
        done.append({"constants": "constant perturbation", "division": "shifted ratio",
                     "subtraction": "weighted difference", "order": "reordered loop"}[kind])
    return ast.unparse(ast.fix_missing_locations(tree)), " and ".join(done) or "unchanged copy"
