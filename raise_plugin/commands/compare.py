"""``raise-ahd compare``: plain and robust methods plus baselines in one harness, with the paper's tables
and paired tests of every method against the best baseline and its plain twin."""
from __future__ import annotations

import sys

from raise_plugin.commands.flags import add_flags
from raise_plugin.commands.run import add_price_flag, parse_prices
from raise_plugin.config import RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness.compare import failure_line, run_compare
from raise_plugin.harness.compare_config import DEFAULT_OUT, RUN_CONTROLS, STUDY_CAPS, CompareConfig
from raise_plugin.harness.significance import significance_summary
from raise_plugin.settings import SettingError, check_settings


# Named settings of whole studies; any flag given beside --preset overrides its value.
PRESETS = {  # each reproduces a documented table, measured on the task's public nominal set: the same on every machine
    # the OBP table of the README: the setting the validation suite chose, its plain twin
    # and the baselines, 300-sample slices, three seeds, one instance per test dataset
    "obp-validated": {"task": "obp", "methods": ("eoh",), "epsilons": (0.01,), "projection": "sphere",
                      "adversary_objective": "regret:baselines", "aggregation": "balanced", "budget": 300,
                      "seeds": 3, "suite_instances": 1, "select_on": "robust", "instance_seed": "public",
                      "out": "obp-validated"},
    # the paper's OBP setting at the paper's scale (1000 samples), three seeds, the whole test suite,
    # each run handing on its robust best as the paper's runs do
    "paper-obp": {"task": "obp", "methods": ("eoh",), "epsilons": (0.002,), "aggregation": "mean",
                  "adversary_objective": "metric", "projection": "paper", "budget": 1000, "seeds": 3,
                  "select_on": "robust", "instance_seed": "public", "out": "paper-obp"},
    # OBP's defaults (chosen on the validation suite) at the paper's scale: the README's paper-scale table
    "obp-1000": {"task": "obp", "methods": ("eoh",), "budget": 1000, "seeds": 3, "instance_seed": "public",
                 "out": "obp-1000"},
}


# compare's settings, each a flag named after its setting in the tree (raise_plugin.settings): the study's
# own, then the run's controls as run has them (caps over the whole study, the endpoint, the sandbox's limits)
SETTINGS = ("task", "methods", "epsilons", "ablations", "seeds", "budget", "pop_size", "tau", "aggregation",
            "adversary_objective", "nominal", "inner_population", "inner_generations", "inner_draws", "projection",
            "programs_in_flight", "llm", "suite_instances", "select_on", "jobs", "executor", "workers", "ship_runs",
            "out", *STUDY_CAPS, *(name for name in RUN_CONTROLS if name != "prices"), "reuse", "figure_formats",
            "progress")
# the fields of CompareConfig each flag fills as it is (seeds is a count: seeds 0..N-1)
FIELDS = tuple(name for name in SETTINGS if name not in ("seeds", "progress"))


def add_compare_arguments(p, **defaults) -> None:
    """Compare's flags; ``defaults`` are this command's own (the demo's preset)."""
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="a named study: obp-validated (the README's 300-sample OBP table), obp-1000 (OBP's "
                        "defaults at the paper's 1000 samples) or paper-obp (the paper's setting at 1000 "
                        "samples); flags given beside it override it (default none: the settings' defaults)")
    p.add_argument("--config", metavar="FILE", help="TOML file of settings (flat or in tables named after the "
                                                     "sections; flags override it, it overrides --preset) "
                                                     "(default none: the settings' defaults)")
    groups: dict = {}
    add_flags(p, SETTINGS, defaults={"out": DEFAULT_OUT, **defaults}, groups=groups,
              helps={"tau": "refresh interval: a refresh every tau generations (pop-size samples each)",
                     "epsilons": "radii eps of the robust runs, comma-separated (an empty list: plain runs only)",
                     "max_cost_usd": "stop the study cleanly once its runs' LLM cost, summed, reaches this: no "
                                     "run starts past it and a run under way is given what is left",
                     "max_llm_calls": "the endpoint receives at most N requests over all runs of the study, "
                                      "retries included: no run starts past it, a run under way is given what "
                                      "is left"})
    add_price_flag(groups)


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


def _apply_config_file(args) -> None:
    """The ``--config`` file's values for every flag the user left unset; a key compare does not
    take is a one-line error naming it."""
    path = getattr(args, "config", None)
    if not path:
        return
    try:
        data = RunConfig.settings_in_toml(path)
    except UnicodeDecodeError:
        raise UserError(f"config file {path}: not UTF-8 text") from None
    given = getattr(args, "given", set())
    taken = set(SETTINGS) | {"prices"}
    for key, value in data.items():
        if key not in taken:
            raise UserError(f"config file {path}: compare does not take {key!r} (it takes: "
                            f"{', '.join(sorted(taken))})")
        if key not in given and f"no_{key}" not in given:
            setattr(args, key, value)  # as written: CompareConfig reads a list or a comma string alike
    args.given = set(given) | set(data)  # the preset fills only what neither the flags nor the file gave


def config_from(args) -> CompareConfig:
    _apply_config_file(args)
    _apply_preset(args)
    prices = parse_prices(getattr(args, "price_items", None))
    fields = {name: getattr(args, name) for name in FIELDS}
    try:  # the settings only the command line reads: a config file may give them of any type
        check_settings({"seeds": args.seeds, "progress": args.progress})
    except SettingError as exc:
        hint = " (a count: the runs take seeds 0..N-1)" if exc.name == "seeds" and isinstance(args.seeds, list) else ""
        raise UserError(f"{exc}{hint}") from None
    written = getattr(args, "prices", None)  # the config file's table, which --price entries go over
    if written is not None and not isinstance(written, dict):  # CompareConfig says what a table it must be
        return CompareConfig(**fields, seeds=tuple(range(args.seeds)), prices=written)
    return CompareConfig(**fields, seeds=tuple(range(args.seeds)), prices={**(written or {}), **(prices or {})} or None)


def run(args) -> int:
    config = config_from(args)
    result = run_compare(config, progress=args.progress)
    for name, table in result.tables.items():
        print()
        print(table.markdown())
    if result.comparisons:
        print("\nWhat is significant (paired over seed and instance, p < 0.05 and a 95 % interval excluding 0):")
        for line in significance_summary(result.comparisons, len(config.study.seeds),
                                         table=result.tables.get("table_all_distributions")):
            print(f"- {line.replace('**', '')}")
    print(f"\nwrote {len(result.files)} files to {result.out}; start with {result.out / 'report.md'}")
    if result.failures:
        print(f"raise-ahd: {failure_line(result.failures, len(result.jobs))}", file=sys.stderr)  # as every line
        return 1
    return 0
