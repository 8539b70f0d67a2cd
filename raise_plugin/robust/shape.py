"""What the wrapper needs from a host method, by the shape of its search state.

One adapter per shape (``population.py``: the EoH family; ``database.py``: FunSearch's
programs database with islands; ``incumbent.py``: HillClimb and RandSample). An adapter is
a mixin between the wrapper's core and the host class; wrapping a new host method means
writing one and listing it in ``SHAPES`` (``wrap.py``).
"""
from __future__ import annotations

__all__ = ["HostShape", "Stopped", "with_mixin"]


def with_mixin(obj, mixin: type, prefix: str):
    """A copy of ``obj`` (same attributes) whose class puts ``mixin`` in front of ``obj``'s class
    (named ``prefix`` + that class's name): how an adapter swaps a host part (population,
    profiler, programs database) for one with robust behaviour without editing the host."""
    cls = type(obj)
    if not isinstance(obj, mixin):
        cls = type(f"{prefix}{cls.__name__}", (mixin, cls), {})
    new = cls.__new__(cls)
    new.__dict__.update(obj.__dict__)
    return new


class Stopped(BaseException):
    """Raised past the host's loops (which swallow ``Exception``) when a stop was requested."""


class HostShape:
    """The interface every adapter provides (the core calls nothing else of the host's state)."""

    #: what ``raise-ahd methods`` says about the adapter
    describe = ""

    @classmethod
    def fits(cls, method_cls: type) -> bool:
        """Whether a host class has this shape."""
        raise NotImplementedError

    def _install_shape(self) -> None:
        """Swap the host's parts for robust ones, after the host's constructor."""
        raise NotImplementedError

    @property
    def _gate(self):
        """The ``EventGate`` guarding the search state."""
        raise NotImplementedError

    @property
    def generation(self) -> int:
        raise NotImplementedError

    @property
    def samples(self) -> int:
        raise NotImplementedError

    def _search_members(self) -> tuple[list, list]:
        """``(members, pending)``: host ``Function``s whose scores follow the instance set."""
        raise NotImplementedError

    @classmethod
    def lanes_refused(cls, method_cls: type) -> str | None:
        """``None`` when ``method_cls``'s loops can sample in lanes (``in_flight.py``: several programs
        in flight, one order of draws and registrations), else where they cannot."""
        host = next((k for k in method_cls.__mro__ if k.__module__.startswith("llm4ad")), method_cls)
        return (f"the host's sampler loop ({host.__module__}.{host.__name__}) draws, evaluates and registers each "
                "sample in a thread of its own; only the EoH family's loops take turns (robust/population.py)")

    def _admission_supported(self) -> str | None:
        """``None`` when the shape gives an admission bound (early rejection can apply), else why not."""
        return "this search state gives no admission bound: every sample meets the whole set"

    def _admission_bound(self) -> float:
        """(Gate lock held.) A score no larger than which a new sample provably never enters the
        search state on the current set; ``-inf`` while any sample could."""
        return float("-inf")

    def _shown(self) -> list:
        """The members a snapshot shows as the population (all of them by default)."""
        return self._search_members()[0]

    def _scores_changed(self) -> None:
        """Called (gate lock held) after the members were re-scored on a new instance set."""

    def _resume_mode_after_restore(self) -> bool:
        """Whether the restored host should skip its start (a template or initial population)."""
        return self.samples >= 1

    def _shape_cursor(self) -> dict:
        """What a sample's record keeps for an exact resume right after it (nothing by default:
        such shapes resume from their last generation's state)."""
        return {}

    def _resume_at(self, cursor: dict) -> None:
        """Continue exactly after the sample whose ``_shape_cursor`` was ``cursor``."""

    def _restore_generation_end(self) -> None:
        """End a generation whose samples were all recorded but whose end was not (after a kill)."""

    def _rng_state(self):
        return None

    def _set_rng_state(self, state) -> None:
        pass

    def _restore_members(self, members: list, pending: list, generation: int, samples: int) -> None:
        raise NotImplementedError
