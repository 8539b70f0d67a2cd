"""``raise-ahd profile``: how badly a heuristic can fail near the nominal data, as eps grows."""
from __future__ import annotations

import math
from pathlib import Path

from raise_plugin.commands.evaluate import all_invalid_status, check_output, resolve_task
from raise_plugin.errors import UserError
from raise_plugin.harness import api
from raise_plugin.harness.profile_files import save_profile
from raise_plugin.commands.flags import SEARCH_TIMEOUT_HELP, add_flags, check_flags, in_flag_words
from tasks.common.classical import classical_rules


PROFILE_DEFAULTS = {"epsilons": api.PROFILE_EPSILONS, "out": "profile-out"}
PROFILE_FLAGS = ("epsilons", "adversary_seeds", "inner_population", "inner_generations", "projection",
                 "adversary_objective", "workers", "timeout")


def register(sub) -> None:
    p = sub.add_parser("profile", help="worst metric the adversary finds within eps, for growing eps")
    p.add_argument("heuristics", nargs="*", metavar="HEURISTIC",
                   help="a .py file, a run directory, an llm4ad log directory or the name of one of the task's "
                        "classical rules")
    add_flags(p, ("task", "epsilons", "adversary_seeds", "compare", "inner_population", "inner_generations",
                  "projection", "adversary_objective", "workers", "timeout", "out", "progress"),
              defaults={**PROFILE_DEFAULTS, "projection": "paper", "adversary_objective": "metric"}, required=("task",),
              choices={"projection": ("paper", "sphere")},
              helps={"epsilons": "radii eps to profile, comma-separated",
                     "projection": "the eps-projection: paper or sphere (a profile searches within the ball)",
                     "adversary_objective": "what the search maximises: metric or regret:baselines (the regret "
                                            "against the task's baselines on the same instance); the profile "
                                            "reports the metric of the instance found",
                     "timeout": SEARCH_TIMEOUT_HELP})
    p.set_defaults(func=run)


def run(args) -> int:
    task = resolve_task(args.task)
    check_flags(args, ("adversary_seeds", "inner_population", "inner_generations", "workers", "timeout"))
    check_output(args.out, folder=True)
    wanted = list(task.baselines) if args.compare == "all" else [c.strip() for c in args.compare.split(",") if c.strip()]
    rules = list(classical_rules(task))  # the paper's baselines, then the task's other classical rules
    lookup = {b.lower(): b for b in rules}
    for b in wanted:
        if b.lower() not in lookup:
            raise UserError(f"--compare: unknown baseline {b!r}; choose from {', '.join(rules)}")
    if not args.heuristics and not wanted:
        raise UserError("nothing to profile: give heuristic files or --compare baselines")
    try:
        profile = api.profile(task, [Path(h) for h in args.heuristics] + wanted, epsilons=args.epsilons,
                              adversary_seeds=args.adversary_seeds, inner_population=args.inner_population,
                              inner_generations=args.inner_generations, projection=args.projection,
                              adversary_objective=args.adversary_objective, workers=args.workers,
                              timeout=args.timeout, progress=args.progress)
    except UserError as exc:
        raise in_flag_words(exc, PROFILE_FLAGS) from None
    written = save_profile(profile, Path(args.out))
    print(profile.markdown())  # with the reasons of its invalid cells, as profile.md
    print("wrote " + ", ".join(str(w) for w in written))
    baselines = {lookup[b.lower()] for b in wanted}
    given = [h for h in profile.heuristics() if h not in baselines] or profile.heuristics()
    return all_invalid_status("profile", given, valid_somewhere(profile))


def valid_somewhere(profile) -> set[str]:
    """The heuristics with a metric on the nominal set or on one searched instance (an infinite one:
    the search found where the heuristic fails)."""
    return ({h for h, mean in profile.nominal.items() if math.isfinite(mean)}
            | {p.heuristic for p in profile.points if math.isfinite(p.metric)})
