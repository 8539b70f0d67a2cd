"""What the inner search maximises: the ``Objective`` and its text form (``metric``, ``regret:...``)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Objective", "parse_objective", "POPULATION_REFERENCES"]

# regret:population compares the attacked best with this many other members (the next best
# by robust score): enough to find an instance on which some other member does better,
# and few enough that references cost at most three extra evaluations per candidate
POPULATION_REFERENCES = 3


@dataclass(frozen=True)
class Objective:
    """What the inner search maximises: the attacked program's ``metric`` (the paper's), or its
    regret against a reference on the same instance: the best of the task's classical
    ``baselines``, the one called ``name`` (``reference="baseline"``), or the best of the
    ``population``'s next ``members`` best programs."""

    kind: str = "metric"
    reference: str | None = None
    members: int = POPULATION_REFERENCES
    name: str | None = None

    def __str__(self) -> str:
        if self.kind == "metric":
            return "metric"
        if self.reference == "population" and self.members != POPULATION_REFERENCES:
            return f"regret:population:{self.members}"
        if self.reference == "baseline":
            return f"regret:{self.name}"
        return f"regret:{self.reference}"


def parse_objective(spec: "str | Objective") -> Objective:
    """``metric``, ``regret:baselines``, ``regret:NAME`` (one baseline of the task, checked when
    the task is known) or ``regret:population[:K]``; a ``ValueError`` names what is wrong."""
    if isinstance(spec, Objective):
        return spec
    text = str(spec).strip().lower()
    if text == "metric":
        return Objective()
    parts = text.split(":")
    if parts[0] == "regret" and len(parts) == 2 and parts[1] == "baselines":
        return Objective("regret", "baselines")
    if parts[0] == "regret" and len(parts) in (2, 3) and parts[1] == "population":
        members = POPULATION_REFERENCES
        if len(parts) == 3:
            if not parts[2].isdigit() or int(parts[2]) < 1:
                raise ValueError(f"adversary objective {spec!r}: K in regret:population:K must be an integer >= 1")
            members = int(parts[2])
        return Objective("regret", "population", members)
    if parts[0] == "regret" and len(parts) == 2 and parts[1]:
        return Objective("regret", "baseline", name=parts[1])
    raise ValueError(f"adversary objective {spec!r}: use metric, regret:baselines, regret:NAME (one classical "
                     f"baseline of the task) or regret:population[:K]")
