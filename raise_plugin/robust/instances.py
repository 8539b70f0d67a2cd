"""The run's instance set: nominal instances first, then the adversarial ones, versioned."""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..rundir.files import NOMINAL_PREFIX
from .hooks import InstanceView

__all__ = ["NOMINAL", "ADVERSARIAL", "InstanceEntry", "RunInstanceSet", "instance_digest", "score_function",
           "bound_function", "rejection_order"]

NOMINAL, ADVERSARIAL = "nominal", "adversarial"


@dataclass
class InstanceEntry:
    """A member of the instance set. ``instance_id`` ends in a digest of the content."""

    instance_id: str
    origin: str
    instance: Any = field(repr=False)
    distance: float = 0.0
    generation: int | None = None
    provenance: dict = field(default_factory=dict, repr=False)

    def view(self) -> InstanceView:
        return InstanceView(self.instance_id, self.origin, self.distance, self.generation)


def instance_digest(instance) -> str:
    """A short, stable digest of an instance (a dict of arrays and scalars)."""
    h = hashlib.sha1()
    items = sorted(instance.items()) if isinstance(instance, dict) else [("", instance)]
    for key, value in items:
        h.update(str(key).encode())
        arr = np.asarray(value)
        if arr.dtype == object:
            h.update(repr(value).encode())
        else:
            h.update(str(arr.dtype).encode() + str(arr.shape).encode())
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()[:10]


def score_function(evaluation, entries: Sequence[InstanceEntry]):
    """The evaluation's ``score_of`` for metrics on ``entries`` in order: under a ``regret:``
    aggregation bound to the entries' reference metrics (the best baseline's on each)."""
    if not getattr(getattr(evaluation, "aggregation", None), "regret", False):
        return evaluation.score_of
    references = evaluation.reference_metrics([e.instance for e in entries])
    return lambda metrics: evaluation.score_of(metrics, references=references)


def bound_function(evaluation, entries: Sequence[InstanceEntry]):
    """``bound(positions, metrics)``: the most the score over ``entries`` can be, given the metrics
    at those positions of the set (``Aggregation.upper_bound``, per-instance evaluations formed
    as ``score_of`` forms them); ``None`` when the aggregation gives no bound (``mean``, ``balanced``)."""
    aggregation = getattr(evaluation, "aggregation", None)
    if aggregation is None or not getattr(aggregation, "bounded", False):
        return None
    total = len(entries)
    references = evaluation.reference_metrics([e.instance for e in entries]) if aggregation.regret else None

    def bound(positions, metrics) -> float:
        evals = -np.asarray(metrics, dtype=float)
        if references is not None:
            evals = evals + references[np.asarray(positions, dtype=int)]
        return aggregation.upper_bound(evals, total)
    return bound


def rejection_order(entries: Sequence[InstanceEntry]) -> list[int]:
    """Positions of the set in the order a candidate meets them when it may be rejected early:
    the adversarial instances first, newest first (found against the population's best, they
    are where a candidate most often loses), then the nominal ones in the set's order. The
    order decides only how soon a rejection comes, never a score."""
    adversarial = [i for i, e in enumerate(entries) if e.origin != NOMINAL]
    return adversarial[::-1] + [i for i, e in enumerate(entries) if e.origin == NOMINAL]


class RunInstanceSet:
    """The ordered members and a version that grows with every change; thread-safe.

    ``evaluation.instances`` (the host evaluation's list) follows every change, so anything
    that evaluates through the host evaluation sees the same set.
    """

    def __init__(self, evaluation, nominal: Sequence):
        self._lock = threading.Lock()
        self._evaluation = evaluation
        self._entries = [InstanceEntry(f"{NOMINAL_PREFIX}{i}-{instance_digest(inst)}", NOMINAL, inst)
                         for i, inst in enumerate(nominal)]
        self._version = 0
        self.nominal = [e.instance for e in self._entries]
        evaluation.nominal_count = len(self.nominal)  # nominal instances lead the set

    def state(self) -> tuple[list[InstanceEntry], int]:
        """The members (a new list) and the version."""
        with self._lock:
            return list(self._entries), self._version

    def add(self, entry: InstanceEntry, max_adversarial: int | None = None):
        """Append ``entry`` (replacing a member with its id), drop the oldest adversarial members
        beyond ``max_adversarial``; ``(members, dropped, version)`` after the change."""
        with self._lock:
            entries = [e for e in self._entries if e.instance_id != entry.instance_id] + [entry]
            dropped = []
            if max_adversarial is not None:
                adversarial = [e for e in entries if e.origin != NOMINAL]
                dropped = adversarial[:max(0, len(adversarial) - max_adversarial)]
                entries = [e for e in entries if e not in dropped]
            self._set(entries, self._version + 1)
            return list(entries), dropped, self._version

    def restore(self, entries: list[InstanceEntry], version: int, nominal: list) -> None:
        """Set the members, version and nominal instances recorded by a run directory."""
        with self._lock:
            self._set(entries, version)
            self.nominal = list(nominal)
            self._evaluation.nominal_count = len(self.nominal)

    def _set(self, entries: list[InstanceEntry], version: int) -> None:
        self._entries = entries
        self._version = version
        self._evaluation.instances = [e.instance for e in entries]
