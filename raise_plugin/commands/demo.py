"""``raise-ahd demo``: the README's main job, a small robust search and comparison, offline.

It is ``raise-ahd compare`` with a preset that runs in under a minute on 2 cores: EoH
plain and with RAISE on online vehicle routing, the paper's settings (population 10,
tau 5, P_in 8, G_in 4, eps 0.002) at a budget of 200 samples, then the test suite,
tables, paired tests, figures and ``report.md``. It trains three seeds, not compare's
five, to stay short: its report and printed summary say that with three seeds a
difference is established only where the test marks it significant. Any compare flag
overrides the preset.
"""
from __future__ import annotations

from raise_plugin.commands.compare import add_compare_arguments, run

PRESET = {"task": "ovrp", "methods": ("eoh",), "epsilons": (0.002,), "budget": 200, "pop_size": 10, "tau": 5,
          "seeds": 3, "out": "demo-out"}


def register(sub) -> None:
    p = sub.add_parser("demo", help="the main job: a small robust search and comparison, offline")
    add_compare_arguments(p, **PRESET)
    p.set_defaults(func=run)
