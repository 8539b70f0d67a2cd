"""``raise-ahd demo``: the README's main job, a small robust search and comparison, offline.

It is ``raise-ahd compare`` with a preset that runs in under a minute on 2 cores: EoH
plain and with RAISE on online vehicle routing, the paper's settings (population 10,
tau 5, P_in 8, G_in 4, eps 0.002) at a budget of 200 samples, then the test suite,
tables, paired tests, figures and ``report.md``. It trains three seeds, not compare's
five, to stay short: its report and printed summary say that with three seeds a
difference is established only where the test marks it significant. It trains on the
task's public nominal set, so that its numbers are the same on every machine (a run's
default, a set drawn from the installation's private key, differs from one machine to
the next). Any compare flag overrides the preset.
"""
from __future__ import annotations

import argparse
import textwrap

from raise_plugin.commands.compare import add_compare_arguments, run
from raise_plugin.harness.variants import METHOD_LABELS

PRESET = {"task": "ovrp", "methods": ("eoh",), "epsilons": (0.002,), "budget": 200, "pop_size": 10, "tau": 5,
          "seeds": 3, "instance_seed": "public", "out": "demo-out"}


def description() -> str:
    """What the demo runs, from its preset (so the help cannot say otherwise)."""
    p = PRESET
    methods, eps = ",".join(p["methods"]), ",".join(f"{e:g}" for e in p["epsilons"])
    method = " and ".join(METHOD_LABELS.get(m, m) for m in p["methods"])
    seeds = f"0-{p['seeds'] - 1}" if p["seeds"] > 1 else "0"
    what = (f"The main job, offline (no LLM): {method} plain and with RAISE on {p['task']} (eps "
            f"{eps}, population {p['pop_size']}, tau {p['tau']}), a budget of "
            f"{p['budget']} samples, seeds {seeds}, on the task's {p['instance_seed']} nominal set (the same "
            f"numbers on every machine); then the baselines and both methods on the test suite, the "
            f"tables, paired tests, figures and {p['out']}/report.md. Run again, it reuses what {p['out']} holds "
            f"(and says so); delete {p['out']} to start afresh.")
    flags = (f"It is `raise-ahd compare --task {p['task']} --methods {methods} --epsilons {eps} "
             f"--budget {p['budget']} --pop-size {p['pop_size']} --tau {p['tau']} --seeds {p['seeds']} "
             f"--instance-seed {p['instance_seed']} --out {p['out']}`. Any flag below overrides its setting (each "
             f"shows the demo's default).")
    return "\n\n".join(textwrap.fill(paragraph, 79) for paragraph in (what, flags))


def register(sub) -> None:
    method = " and ".join(METHOD_LABELS.get(m, m) for m in PRESET["methods"])
    p = sub.add_parser("demo", help=f"the main job, offline: {method} plain and with RAISE on {PRESET['task']}, "
                                    f"{PRESET['seeds']} seeds, budget {PRESET['budget']}, against the baselines",
                       description=description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_compare_arguments(p, **PRESET)
    p.set_defaults(func=run)
