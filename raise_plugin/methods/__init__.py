"""Host-compatible methods by name: the registry ``raise-ahd run --method`` and the harness look up.

Every entry has the constructor shape of llm4ad's ``EoH`` (``llm``, ``evaluation``,
``profiler``, ``max_sample_nums``, ``pop_size``, ...) and can be wrapped with
``raise_plugin.robust.robust``.
"""
from __future__ import annotations

from llm4ad.method.eoh import EoH

from .eohs import EoHS
from .partevo import PartEvo
from .reevo import ReEvo

__all__ = ["METHODS", "get_method"]

METHODS: dict[str, type] = {
    "eoh": EoH,
    "reevo": ReEvo,
    "partevo": PartEvo,
    "eohs": EoHS,
}


def get_method(name: str) -> type:
    """The method class registered as ``name``."""
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; registered: {', '.join(sorted(METHODS))}") from None
