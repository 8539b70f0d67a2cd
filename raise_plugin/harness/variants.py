"""Compare's plan: the trained configurations (variants) of each method, and the names of their results."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from raise_plugin.settings import default, fallback

__all__ = ["Variant", "plan_variants", "result_name", "METHOD_LABELS", "ABLATIONS"]

METHOD_LABELS = {"eoh": "EoH", "reevo": "ReEvo", "partevo": "PartEvo", "eohs": "EoH-S", "moh": "MoH", "gp": "GP",
                 "funsearch": "FunSearch",
                 "hillclimb": "HillClimb", "randsample": "RandSample"}

# the paper's Table 4: switch -> (label suffix, run settings), then this plugin's rows beyond the
# paper: the regret adversary and the balanced score (issue "a regret adversary"), each alone and together
ABLATIONS = {
    "no-constraint": ("w/o Dis. Constraints", {"constraint": "none"}),
    "flat": ("w/o Base Distributions", {"encoding": "flat"}),
    "no-mapping": ("w/o eps-Mapping", {"projection": "none"}),
    "regret-baselines": ("w/ regret:baselines adversary", {"adversary_objective": "regret:baselines"}),
    "regret-population": ("w/ regret:population adversary", {"adversary_objective": "regret:population"}),
    "balanced": ("w/ balanced score", {"aggregation": "balanced"}),
    "regret-balanced": ("w/ regret:baselines + balanced", {"adversary_objective": "regret:baselines",
                                                           "aggregation": "balanced"}),
}


@dataclass(frozen=True)
class Variant:
    """One trained configuration: a method, plain or robust (at one eps, with adversary switches)."""

    key: str
    label: str
    method: str
    robust: bool
    epsilon: float | None = None
    switches: tuple = ()
    kind: str = "plain"  # plain | robust | ablation


def plan_variants(methods: Iterable[str], epsilons: Iterable[float],
                  ablations: bool = default("ablations")) -> list[Variant]:
    """Every method plain and robust at each eps; with ``ablations``, the paper's three
    component ablations of the robust method at the first eps (the fourth, "w/o robust
    search", is the plain run). Two variants of one key (a method or an eps given twice, two
    radii alike in ``{eps:g}``) would share their runs and results: ``ValueError``."""
    epsilons = list(epsilons)
    out = []
    for m in methods:
        name = METHOD_LABELS.get(m, m)
        out.append(Variant(f"{m}-plain", name, m, False))
        for e in epsilons:
            out.append(Variant(f"{m}-raise-eps{e:g}", f"RAISE-{name} (eps={e:g})", m, True, float(e), (), "robust"))
        if ablations and epsilons:
            e = epsilons[0]
            for key, (suffix, switches) in ABLATIONS.items():
                out.append(Variant(f"{m}-raise-eps{e:g}-{key}", f"RAISE-{name} {suffix}", m, True, float(e),
                                   tuple(sorted(switches.items())), "ablation"))
    keys = [v.key for v in out]
    repeated = next((key for i, key in enumerate(keys) if key in keys[:i]), None)
    if repeated is not None:
        raise ValueError(f"two variants named {repeated!r}: give each method and eps once")
    return out


def result_name(key: str, seed: int, select_on: str = fallback("select_on")) -> str:
    """The stem of a run's results file: the selection is part of it, so the two never mix."""
    return f"{key}-seed{seed}" + ("" if select_on == "robust" else f"-{select_on}-selected")
