"""Methods by name: the registry ``raise-ahd run --method`` and the harness look up.

llm4ad's single-objective methods (EoH, FunSearch, HillClimb, RandSample) and ours (ReEvo,
PartEvo, the EoH-S-style and MoH-style baselines, and tree GP, built on the host's EoH). Every entry takes the host's constructor
arguments (``llm``, ``evaluation``, ``profiler``, ``max_sample_nums``, ``num_samplers``, ...;
the EoH family also ``pop_size``) and can be wrapped with ``raise_plugin.robust.robust``;
``method_table()`` says with which adapter. The host's multi-objective methods (MEoH,
MOEA/D, NSGA-II) score programs with a vector and are not wrapped.
"""
from __future__ import annotations

from llm4ad.method.eoh import EoH
from llm4ad.method.funsearch import FunSearch
from llm4ad.method.hillclimb import HillClimb
from llm4ad.method.randsample import RandSample

from ..errors import UnknownName
from ..llm import asks_llm
from ..robust import shape_of
from .eohs import EoHS
from .gp import GP
from .moh import MoH
from .partevo import PartEvo
from .reevo import ReEvo

__all__ = ["METHODS", "get_method", "method_table", "HOST_MULTI_OBJECTIVE"]

METHODS: dict[str, type] = {
    "eoh": EoH,
    "reevo": ReEvo,
    "partevo": PartEvo,
    "eohs": EoHS,
    "moh": MoH,
    "gp": GP,
    "funsearch": FunSearch,
    "hillclimb": HillClimb,
    "randsample": RandSample,
}

# the host's methods that are not wrapped, and why
HOST_MULTI_OBJECTIVE = {"meoh": "multi-objective (a score vector per program)",
                        "moead": "multi-objective (a score vector per program)",
                        "nsga2": "multi-objective (a score vector per program)"}


def get_method(name: str) -> type:
    """The method class registered as ``name``."""
    try:
        return METHODS[name]
    except KeyError:
        raise UnknownName(f"unknown method {name!r}; registered: {', '.join(sorted(METHODS))}") from None


def method_table() -> list[tuple[str, str, str]]:
    """``(name, class, how robust() wraps it)`` for every method, the unwrapped host ones last; a method
    that asks its back-end nothing (GP) says so."""
    rows = []
    for name, cls in METHODS.items():
        shape = shape_of(cls)
        how = shape.describe if shape is not None else "cannot be wrapped"
        own = "" if asks_llm(cls) else "; asks no LLM: writes its own programs"
        rows.append((name, f"{cls.__module__.split('.')[0]}.{cls.__name__}", how + own))
    for name, why in HOST_MULTI_OBJECTIVE.items():
        rows.append((name, "llm4ad", f"not wrapped: {why}"))
    return rows
