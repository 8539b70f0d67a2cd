"""GP's trees: the features they read, and the typed primitive set (DEAP) they are built from.

A tree is a DEAP ``PrimitiveTree`` over two types: ``Vector`` (one value per candidate: a bin,
an operation, an insertion) and ``float`` (one value per decision: the item, the time, a
column of a fixed-length argument, a constant). The root is a ``Vector``, so every tree
scores the candidates. ``gp_probe`` reads a task's features from its template;
``gp_render`` simplifies a tree and renders it to Python source.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import UserError

try:  # an optional extra (the plugin's ``gp`` extra, or ``pip install deap``); only the gp method needs it
    from deap import gp as deap_gp
except ImportError:  # pragma: no cover - exercised only without the extra
    deap_gp = None

__all__ = ["Vector", "Feature", "Signature", "TemplateError", "primitive_set", "to_node", "float_source",
           "require_deap", "Node", "OPERATORS", "DIVISION_GUARD"]

DIVISION_GUARD = 1e-9  # protected division: a denominator within this of 0 is replaced by 1


class TemplateError(UserError, ValueError):
    """A template GP cannot evolve (one line, naming what is wrong)."""


class Vector:
    """DEAP type of a value per candidate (a numpy array of the candidates' length)."""


def require_deap() -> None:
    if deap_gp is None:
        raise UserError("the gp method needs DEAP: pip install 'deap>=1.4' (the plugin's gp extra)")


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


def float_source(feature: Feature) -> str:
    """The feature's expression cast to floats (an array of them for a per-candidate feature)."""
    return f"np.asarray({feature.source}, dtype=float)" if feature.vector else f"float({feature.source})"


# --------------------------------------------------------------------------- primitives
def _pdiv(a, b):
    """Protected division: ``a / b``, the denominator replaced by 1 where ``|b| <= 1e-9``."""
    return a / np.where(np.abs(b) > DIVISION_GUARD, b, 1.0)


def _ifgt(a, b, c, d):
    return np.where(a > b, c, d)


# base name -> (arity, numpy function); the numpy function folds constants
OPERATORS: dict[str, tuple[int, Callable]] = {
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
    for name, (arity, fn) in OPERATORS.items():
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
