"""``raise-ahd resume RUN_DIR``: continue a recorded run (after a crash or a kill) until its budget."""
from __future__ import annotations

import sys

from raise_plugin.commands.run import ENDPOINT_FLAGS, add_cap_arguments, execute
from raise_plugin.runner import resume_run


def register(sub) -> None:
    p = sub.add_parser("resume", help="continue a run directory until its budget (after a crash or kill -9)")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory written by `raise-ahd run`")
    p.add_argument("--budget", type=int, help="raise the sample budget before continuing")
    add_cap_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    method = resume_run(args.run_dir, budget=args.budget, **{name: getattr(args, name) for name in ENDPOINT_FLAGS},
                        on_repair=lambda message: print(f"raise-ahd: warning: {message}", file=sys.stderr))
    if method.samples >= method.budget:
        print(f"{args.run_dir}: already at its budget ({method.samples} samples); nothing to do")
    return execute(method, args.run_dir, progress=not args.no_progress)
