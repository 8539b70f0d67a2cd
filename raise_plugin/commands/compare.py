"""``raise-ahd compare``: plain and robust methods plus baselines in one harness, with the paper's tables
and paired tests of every method against the best baseline and its plain twin."""
from __future__ import annotations

import argparse

from raise_plugin.errors import UserError
from raise_plugin.harness.compare import run_compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.paper_tables import significance_summary


# Named settings of whole studies; any flag given beside --preset overrides its value.
PRESETS = {
    # the OBP table of the README: the setting the validation suite chose, its plain twin
    # and the baselines, 300-sample slices, three seeds, one instance per test dataset
    "obp-validated": {"task": "obp", "methods": "eoh", "robust_eps": "0.01", "projection": "sphere",
                      "adversary_objective": "regret:baselines", "aggregation": "balanced", "budget": 300,
                      "seeds": 3, "suite_instances": 1, "select_on": "robust", "out": "obp-validated"},
    # the paper's OBP setting at the paper's scale (1000 samples), three seeds, the whole test suite,
    # each run handing on its robust best as the paper's runs do
    "paper-obp": {"task": "obp", "methods": "eoh", "robust_eps": "0.002", "aggregation": "mean",
                  "adversary_objective": "metric", "projection": "paper", "budget": 1000, "seeds": 3,
                  "select_on": "robust", "out": "paper-obp"},
    # OBP's defaults (chosen on the validation suite) at the paper's scale: the README's paper-scale table
    "obp-1000": {"task": "obp", "methods": "eoh", "budget": 1000, "seeds": 3, "out": "obp-1000"},
}


def add_compare_arguments(p, **defaults) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="a named study: obp-validated (the README's 300-sample OBP table), obp-1000 (OBP's "
                        "defaults at the paper's 1000 samples) or paper-obp (the paper's setting at 1000 "
                        "samples); flags given beside it override it")
    p.add_argument("--task", default=defaults.get("task", "obp"))
    p.add_argument("--methods", default=defaults.get("methods", "eoh"),
                   help="comma-separated: eoh, reevo, partevo, eohs, moh, gp, funsearch, hillclimb, randsample "
                        "(default eoh; `raise-ahd methods` lists them)")
    p.add_argument("--robust-eps", default=defaults.get("robust_eps"),
                   help="comma-separated eps for the RAISE runs (default: the task's, see `raise-ahd tasks`; "
                        "else the paper's 0.002)")
    p.add_argument("--ablations", action="store_true",
                   help="also run the paper's three component ablations and the regret and balanced rows")
    p.add_argument("--aggregation", default=defaults.get("aggregation"),
                   help="robust runs' A over the instance set: mean, min, cvar:ALPHA, balanced[:W], each "
                        "optionally after regret: or regret:NAME: (default: the task's, else mean)")
    p.add_argument("--adversary-objective", default=defaults.get("adversary_objective"),
                   help="robust runs' inner objective: metric, regret:baselines, regret:NAME, "
                        "regret:population[:K] (default: the task's, else metric)")
    p.add_argument("--projection", default=defaults.get("projection"),
                   help="robust runs' eps-projection: paper or sphere (default: the task's, else paper)")
    p.add_argument("--inner-draws", type=int, default=None,
                   help="instances per candidate distribution in the inner search (default: the task's)")
    p.add_argument("--budget", type=int, default=defaults.get("budget", 1000), help="samples per run (N_max)")
    p.add_argument("--pop-size", type=int, default=defaults.get("pop_size", 10))
    p.add_argument("--seeds", type=int, default=defaults.get("seeds", 5),
                   help="number of seeds (0..N-1; default 5: fewer cannot tell most differences from seed noise)")
    p.add_argument("--llm", default="offline", help="offline (default), openai[:MODEL] or replay:FILE")
    p.add_argument("--tau", type=int, default=defaults.get("tau", 5), help="refresh interval in generations")
    p.add_argument("--inner-population", type=int, default=8, help="P_in (default 8)")
    p.add_argument("--inner-generations", type=int, default=4, help="G_in (default 4)")
    p.add_argument("--nominal", type=int, default=None, help="use only the first N nominal instances")
    p.add_argument("--suite-instances", type=int, default=defaults.get("suite_instances"),
                   help="at most N instances per test dataset (all by default)")
    p.add_argument("--select-on", default=defaults.get("select_on"),
                   help="each run's final program: robust (its robust best) or validation (the member of its "
                        "last population best on the validation suite; plain and robust runs alike); default: "
                        "the task's (`raise-ahd tasks`; robust for the built-in tasks). The test suite is "
                        "refused")
    p.add_argument("--jobs", type=int, default=None,
                   help="training and evaluation jobs at once, each in its own process (default: half the "
                        "cores, at least 1; 1 runs them one after another in this process)")
    p.add_argument("--executor", default=None,
                   help="where the jobs run: process (default: --jobs local processes), serial (one at a time "
                        "in this process, each evaluating in one worker), dask://HOST:PORT or dask://local[:N] "
                        "(every job on a Dask cluster)")
    p.add_argument("--workers", type=int, default=None,
                   help="evaluation workers of each job (default: its share of the cores; on Dask, its worker's "
                        "threads)")
    p.add_argument("--ship-runs", action=argparse.BooleanOptionalAction, default=None,
                   help="send each run directory back to --out as an archive (default: only from workers that "
                        "do not see --out, which they find out by themselves)")
    p.add_argument("--out", default=defaults.get("out", "compare-out"))


def register(sub) -> None:
    p = sub.add_parser("compare", help="train plain and robust methods, evaluate them and the baselines, "
                                       "write the paper's tables and figures")
    add_compare_arguments(p)
    p.set_defaults(func=run)


def _apply_preset(args) -> None:
    """The preset's values for every flag the user left unset (argparse defaults are ``None``-free, so
    ``args.given`` names the flags that were typed)."""
    if not getattr(args, "preset", None):
        return
    given = getattr(args, "given", set())
    for key, value in PRESETS[args.preset].items():
        if key not in given:
            setattr(args, key, value)


def config_from(args) -> CompareConfig:
    _apply_preset(args)
    try:
        eps = None if args.robust_eps is None else tuple(
            float(e) for e in str(args.robust_eps).split(",") if e.strip())
    except ValueError:
        raise UserError(f"--robust-eps: not a list of numbers: {args.robust_eps!r}") from None
    if args.seeds < 1:
        raise UserError("--seeds must be at least 1")
    if args.workers is not None and args.workers < 1:
        raise UserError("--workers must be at least 1")
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise UserError("--jobs must be at least 1")
    return CompareConfig(task=args.task, methods=tuple(m.strip() for m in args.methods.split(",") if m.strip()),
                         epsilons=eps, ablations=args.ablations, budget=args.budget, pop_size=args.pop_size,
                         seeds=tuple(range(args.seeds)), llm=args.llm, out=args.out, tau=args.tau,
                         inner_population=args.inner_population, inner_generations=args.inner_generations,
                         nominal=args.nominal, suite_instances=args.suite_instances, workers=args.workers,
                         executor=args.executor, jobs=getattr(args, "jobs", None),
                         ship_runs=getattr(args, "ship_runs", None), aggregation=args.aggregation,
                         adversary_objective=args.adversary_objective, inner_draws=args.inner_draws,
                         projection=args.projection, select_on=args.select_on)


def run(args) -> int:
    config = config_from(args)
    result = run_compare(config)
    for name, table in result.tables.items():
        print()
        print(table.markdown())
    if result.comparisons:
        print("\nWhat is significant (paired over seed and instance, p < 0.05 and a 95 % interval excluding 0):")
        per_slice = result.tables.get("table_all_distributions")
        for line in significance_summary(result.comparisons, len(config.seeds),
                                         slices=per_slice.marked() if per_slice else None):
            print(f"- {line.replace('**', '')}")
    print(f"\nwrote {len(result.files)} files to {result.out}; start with {result.out / 'report.md'}")
    return 0
