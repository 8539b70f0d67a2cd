"""``raise-ahd demo``: the README's main job, a small robust search and comparison, offline.

It is ``raise-ahd compare`` with a preset that runs in a few minutes on 2 cores: EoH
plain and with RAISE on one task, a small budget, then the test suite, tables, figures
and ``report.md``. Any compare flag overrides the preset.
"""
from __future__ import annotations

from raise_plugin.commands.compare import add_compare_arguments, run

PRESET = {"task": "obp", "methods": "eoh", "robust_eps": "0.002", "budget": 40, "pop_size": 6, "tau": 2,
          "seeds": 1, "out": "demo-out"}


def register(sub) -> None:
    p = sub.add_parser("demo", help="the main job: a small robust search and comparison, offline")
    add_compare_arguments(p, **PRESET)
    p.set_defaults(func=run)
