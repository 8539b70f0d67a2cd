"""``raise-ahd resume RUN_DIR``: continue a recorded run (after a crash or a kill) until its budget."""
from __future__ import annotations

import sys

from raise_plugin.commands.run import execute
from raise_plugin.runner import ENDPOINT_CHANGES, resume_run
from raise_plugin.commands.flags import add_flags


def register(sub) -> None:
    p = sub.add_parser("resume", help="continue a run directory until its budget (after a crash or kill -9)")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory written by `raise-ahd run`")
    recorded = ("budget",) + ENDPOINT_CHANGES
    add_flags(p, recorded, unset=True, shown={name: "as recorded" for name in recorded},
              helps={"budget": "raise the sample budget before continuing",
                     "base_url": "move the run to this endpoint (recorded from then on)",
                     "max_cost_usd": "stop cleanly once the LLM cost reaches this: no request starts past it (the "
                                     "model's price is the run's, as recorded, else the built-in table's)"})
    add_flags(p, ("progress",))
    p.set_defaults(func=run)


def run(args) -> int:
    method = resume_run(args.run_dir, budget=args.budget, **{name: getattr(args, name) for name in ENDPOINT_CHANGES},
                        on_repair=lambda message: print(f"raise-ahd: warning: {message}", file=sys.stderr))
    if method.samples >= method.budget:
        print(f"{args.run_dir}: already at its budget ({method.samples} samples); nothing to do")
    return execute(method, args.run_dir, progress=args.progress)
