"""``robust(Method)``: the host class with the wrapper's core and the adapter for its shape."""
from __future__ import annotations

from typing import Iterable

from ..errors import BadArgumentType
from .accounting import Accounting
from .core import RobustCore
from .database import DatabaseShape
from .hooks import Callback, checked_callbacks
from .incumbent import IncumbentShape
from .population import PopulationShape
from .resume import Checkpoints
from .shape import HostShape
from .view import RunView

__all__ = ["robust", "RobustMethodMixin", "shape_of"]


class RobustMethodMixin(RobustCore, RunView, Accounting, Checkpoints):
    """Everything the wrapped method adds; callbacks reach the run through these methods."""


def _shapes() -> list[type[HostShape]]:
    return [PopulationShape, DatabaseShape, IncumbentShape]



def shape_of(method_cls: type) -> type[HostShape] | None:
    """The adapter for ``method_cls``'s shape, or ``None`` when no adapter fits it."""
    for shape in _shapes():
        if shape.fits(method_cls):
            return shape
    return None


def robust(method_cls: type, *, callbacks: Iterable[Callback] | None = None) -> type:
    """A subclass of ``method_cls`` that fires callbacks on its events (see the package docstring).

    ``callbacks`` given here are shared by every instance of the returned class; more can be
    passed to its constructor (``callbacks=[...]``), together with ``seed`` (parent selection)
    and ``recorder`` (a ``raise_plugin.rundir.writer.RunDirectory``). A host without generations
    (FunSearch, HillClimb, RandSample) ends one every ``pop_size`` samples (10 when not given;
    ``generation_size`` sets it apart from ``pop_size``), and its template counts as its first sample.
    """
    if not isinstance(method_cls, type):
        raise BadArgumentType(f"method_cls: robust() takes a method class (EoH, FunSearch, rp.get_method('reevo'), "
                              f"...), got {type(method_cls).__name__} {method_cls!r:.40}")
    callbacks = checked_callbacks(callbacks)
    name = f"Robust{method_cls.__name__}"
    if issubclass(method_cls, RobustMethodMixin):
        return type(name, (method_cls,), {"_bound_callbacks": tuple(method_cls._bound_callbacks) + callbacks})
    shape = shape_of(method_cls)
    if shape is None:
        raise BadArgumentType(f"method_cls: robust() cannot wrap {method_cls.__name__}: it keeps neither a population "
                              f"(EoH), a programs database (FunSearch) nor an incumbent (HillClimb, RandSample)")
    return type(name, (RobustMethodMixin, shape, method_cls), {"_bound_callbacks": callbacks,
                                                              "__doc__": f"{method_cls.__name__} with callbacks (RAISE)."})
