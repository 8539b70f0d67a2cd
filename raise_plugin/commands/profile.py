"""``raise-ahd profile``: how badly a heuristic can fail near the nominal data, as eps grows."""
from __future__ import annotations

import math
from pathlib import Path

from raise_plugin.adversary.projection import check_epsilon
from raise_plugin.commands.evaluate import all_invalid_status, check_output, check_timeout, resolve_task
from raise_plugin.errors import UserError
from raise_plugin.harness.robustness_profile import robustness_profile, save_profile
from raise_plugin.engine.suite import Heuristic
from raise_plugin.programs import ProgramError, check_program, read_program
from raise_plugin.settings import SETTINGS, SettingError, add_flags


PROFILE_DEFAULTS = {"epsilons": (0.001, 0.002, 0.005, 0.01), "out": "profile-out"}


def register(sub) -> None:
    p = sub.add_parser("profile", help="worst metric the adversary finds within eps, for growing eps")
    p.add_argument("heuristics", nargs="*", metavar="HEURISTIC",
                   help="a .py file, a run directory or an llm4ad log directory")
    add_flags(p, ("task", "epsilons", "adversary_seeds", "compare", "inner_population", "inner_generations",
                  "projection", "adversary_objective", "workers", "timeout", "out", "progress"),
              defaults={**PROFILE_DEFAULTS, "projection": "paper", "adversary_objective": "metric"}, required=("task",),
              helps={"epsilons": "radii eps to profile, comma-separated",
                     "adversary_objective": "what the search maximises: metric or regret:baselines (the regret "
                                            "against the task's baselines on the same instance); the profile "
                                            "reports the metric of the instance found",
                     "timeout": "seconds allowed per instance; a search may take that times the instances it "
                                "evaluates"})
    p.set_defaults(func=run)


def _objective_switches(objective: str) -> dict:
    return {"objective": "regret", "references": "baselines"} if objective == "regret:baselines" else {}


def run(args) -> int:
    task = resolve_task(args.task)
    epsilons = sorted(set(args.epsilons))
    if not epsilons:
        raise UserError("--epsilons: give one or more positive radii, e.g. 0.001,0.002")
    for name in ("epsilons", "adversary_seeds", "inner_population", "inner_generations", "workers"):
        try:
            SETTINGS[name].check(getattr(args, name))
        except SettingError as exc:
            raise UserError(f"--{exc.name.replace('_', '-')}: {exc.reason}") from None
    if args.projection == "none" or args.adversary_objective not in ("metric", "regret:baselines"):
        raise UserError("profile searches with --projection paper or sphere and --adversary-objective metric or "
                        "regret:baselines")
    reach = check_epsilon(task, max(epsilons))
    if reach is not None:
        raise UserError(f"--epsilons {max(epsilons):g} is beyond the largest distance {task.name}'s distributions can "
                        f"reach from its nominal histograms ({reach:.4g})")
    check_timeout(args.timeout)
    check_output(args.out, folder=True)
    heuristics = []
    for source in args.heuristics:
        try:
            name, code = read_program(source)
            check_program(code, source=str(source), template=getattr(task, "template_program", None))
        except ProgramError as exc:
            raise UserError(str(exc)) from None
        except UnicodeDecodeError:
            raise UserError(f"{source}: not a Python file (not UTF-8 text)") from None
        heuristics.append(Heuristic(name, code=code))
    wanted = list(task.baselines) if args.compare == "all" else [c.strip() for c in args.compare.split(",") if c.strip()]
    lookup = {b.lower(): b for b in task.baselines}
    for b in wanted:
        if b.lower() not in lookup:
            raise UserError(f"--compare: unknown baseline {b!r}; choose from {', '.join(task.baselines)}")
        heuristics.append(Heuristic(lookup[b.lower()], baseline=lookup[b.lower()]))
    if not heuristics:
        raise UserError("nothing to profile: give heuristic files or --compare baselines")
    profile = robustness_profile(task.name, heuristics, epsilons, list(range(args.adversary_seeds)),
                                 inner_population=args.inner_population, inner_generations=args.inner_generations,
                                 workers=args.workers, progress=args.progress, timeout=args.timeout,
                                 projection=args.projection, **_objective_switches(args.adversary_objective))
    written = save_profile(profile, Path(args.out))
    print(profile.markdown())
    for h in profile.heuristics():
        failed = [p for p in profile.points if p.heuristic == h and p.reason and math.isnan(p.metric)]
        if failed:
            skipped = sum(p.skipped for p in failed)
            first = next((p.reason for p in failed if not p.skipped), failed[0].reason)
            print(f"{h}: {len(failed)} of {len(profile.points) // len(profile.heuristics())} searches failed: "
                  f"{first}" + (f" ({skipped} skipped)" if skipped else ""))
    print("wrote " + ", ".join(str(w) for w in written))
    given = [h.name for h in heuristics if h.code is not None] or [h.name for h in heuristics]
    return all_invalid_status("profile", given, valid_somewhere(profile))


def valid_somewhere(profile) -> set[str]:
    """The heuristics with a metric on the nominal set or on one searched instance."""
    return ({h for h, mean in profile.nominal.items() if not math.isnan(mean)}
            | {p.heuristic for p in profile.points if not math.isnan(p.metric)})
