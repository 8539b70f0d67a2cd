"""The hook protocol of a robust method: ``Callback`` and the frozen views its hooks receive.

Hooks receive the method (the driver, see ``raise_plugin.robust``) and a frozen
``RunSnapshot``. Thread safety, as the wrapper guarantees it:

- hooks are never called concurrently with each other: every call goes through one
  dispatch lock, whatever sampler thread triggers it;
- ``on_sample_evaluated`` runs while the population is locked, so it sees the sample
  exactly where it was registered; keep it quick;
- ``on_generation_end`` runs with parent selection and registration paused in every
  sampler thread (LLM calls and evaluations already under way go on), so a callback
  may change the instance set there (``method.add_instance``) and the very next
  selection sees the new scores;
- ``on_instances_updated`` is called from inside ``method.add_instance``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from ..errors import UserError

__all__ = ["Callback", "RunSnapshot", "ProgramView", "InstanceView", "SampleView", "InstanceUpdate", "HOOKS",
           "checked_callbacks"]


@dataclass(frozen=True)
class ProgramView:
    """One heuristic: its id (hash of the program text), function code and robust score on the current set."""

    program_id: str
    code: str
    score: float
    algorithm: str = ""


@dataclass(frozen=True)
class InstanceView:
    """One member of the instance set; ``distance`` is d(p, nearest nominal histogram) (0 for nominal ones)."""

    instance_id: str
    origin: str
    distance: float = 0.0
    generation: int | None = None


@dataclass(frozen=True)
class RunSnapshot:
    """The state of a run at one event, frozen (later changes do not show through)."""

    generation: int
    samples: int
    budget: int | None
    population: tuple[ProgramView, ...]
    pending: tuple[ProgramView, ...]
    instance_set: tuple[InstanceView, ...]
    instance_set_version: int
    refreshes: int

    @property
    def instance_set_size(self) -> int:
        return len(self.instance_set)

    @property
    def best(self) -> ProgramView | None:
        """The population member with the highest finite robust score (``None`` if none has one)."""
        finite = [p for p in self.population if math.isfinite(p.score)]
        return max(finite, key=lambda p: p.score) if finite else None


@dataclass(frozen=True)
class SampleView:
    """A sample as registered: its 1-based order, the program, and its per-instance metrics on the current set."""

    sample: int
    program: ProgramView
    metrics: Mapping[str, float | None]
    instance_set_version: int
    error: str | None = None
    # what the run directory records beside: program_id, program (full text), score (None when
    # invalid), joined, duplicate, generation, broken, failed_on, sample_time, evaluate_time
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class InstanceUpdate:
    """What one change of the instance set did: members added and dropped, programs re-scored."""

    version: int
    added: tuple[InstanceView, ...]
    dropped: tuple[InstanceView, ...]
    rescored: tuple[ProgramView, ...]
    evaluations: int
    seconds: float
    provenance: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    arrays: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  # recorded with the instance


class Callback:
    """Base class: every hook does nothing. Subclass and override the ones you need."""

    #: whether ``state_dict`` goes into checkpoints
    checkpointed = True

    @property
    def state_key(self) -> str:
        """The key of this callback's state in a checkpoint. Two callbacks of a run with the same
        key are told apart by their order (``#2``, ``#3`` after the first); override it to name
        what distinguishes two of one class instead."""
        return type(self).__qualname__

    def reset(self) -> None:
        """Forget what an earlier run left in this callback (one given to ``robust()`` is shared by every
        run of the class, and an object may be given to a second run): called once a run first uses its
        callbacks, before a resumed run restores their states (``load_state_dict``) and before
        ``on_run_start``. Nothing by default."""

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        """Before the first sample (or, on resume, before the first new one)."""

    def on_sample_evaluated(self, method, snapshot: RunSnapshot, sample: SampleView) -> None:
        """After a sample is scored on the current set and registered (fired after the population
        lock is released, in registration order; selection and registration wait meanwhile)."""

    def on_generation_end(self, method, snapshot: RunSnapshot) -> None:
        """After survival moved the generation counter (selection paused)."""

    def on_instances_updated(self, method, snapshot: RunSnapshot, update: InstanceUpdate) -> None:
        """After the instance set changed and the population and pending samples were re-scored."""

    def on_run_end(self, method, snapshot: RunSnapshot) -> None:
        """After the last sample."""

    def on_exception(self, method, snapshot: RunSnapshot, exc: BaseException) -> None:
        """The run ended with ``exc`` (an interrupt, a failure of the host): everything recorded
        so far is saved, and ``resume`` continues. To end a run early, call
        ``method.request_stop(reason)`` from any hook instead."""

    def summary_fields(self) -> dict:
        """What this callback adds to the run's summary (``summary()``, ``summary.json``): JSON-serialisable
        fields under names of its own; none by default."""
        return {}

    def state_dict(self) -> dict:
        """JSON-serialisable state that a resumed run needs."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` returned."""

    def state_from_records(self, log, generation: int) -> None:
        """On resume, when the checkpoint holds no state of this callback (a kill before the first
        checkpoint, or one rebuilt from the records after damage): restore what the run directory's
        records (``log``, a ``RunLog``) say of its first ``generation`` generations. Nothing by default."""


HOOKS = tuple(name for name in vars(Callback) if name.startswith("on_"))


def checked_callbacks(callbacks) -> tuple:
    """``callbacks`` (a list, or ``None``) as a tuple, each an instance with every hook (a ``Callback``); else a
    one-line ``UserError``: an object without them (or a class, whose hooks are unbound) failed at every event,
    logged, and the run went on."""
    if callbacks is None:
        return ()
    if isinstance(callbacks, (Callback, str, bytes)) or not isinstance(callbacks, Iterable):
        raise UserError(f"callbacks: give a list of Callbacks, got {type(callbacks).__name__}")
    given = tuple(callbacks)
    for cb in given:
        if isinstance(cb, type):  # its hooks would each fail, unbound, and the run end in a TypeError
            raise UserError(f"callbacks: {cb.__name__} is a class: give an instance, {cb.__name__}()")
        missing = [hook for hook in HOOKS if not callable(getattr(cb, hook, None))]
        if missing:
            raise UserError(f"callbacks: {cb!r} has no {missing[0]}: subclass raise_plugin.robust.Callback")
    return given
