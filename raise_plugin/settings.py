"""The one tree of settings: every setting of a run, a compare and the commands beside them,
each with its one name, default, unit and check, written here once.

The tree reads as a run is built::

    run        task, method, robust, seed, out
      budget     budget, pop_size, max_cost_usd, max_llm_calls, max_failed_requests
      adversary  epsilon, tau, tau_unit, aggregation, max_adversarial, instances_per_refresh, nominal,
                 adversary_objective
        inner search  inner_population, inner_generations, inner_draws, projection, encoding,
                      constraint, length
      llm        llm, base_url, record, prices, max_tokens, llm_timeout, num_samplers
      engine     executor, workers, num_evaluators, programs_in_flight, jit, jit_after, early_reject,
                 host_profiler, validation_trace
        sandbox    timeout, memory_mb, file_mb, output_mb (the limits of each evaluation)
    harness    methods, epsilons, ablations, seeds, ... (compare, profile, rerank, evaluate, select)

A setting's name is the same everywhere: the Python keyword (``RunConfig(inner_population=4)``) and
the field of its section's config (``RunConfig.adversary.inner_search.inner_population``; two
settings named as their section have a field of their own name there, ``Setting.field_name``:
``budget.samples`` and ``llm.backend``), the TOML key (top level or in its section's table:
``[adversary.inner_search]``), the record in ``config.json`` and the flag (``--inner-population``).
``RunConfig``, ``CompareConfig``, ``AdversaryConfig`` and ``SearchConfig`` take their defaults and
their checks from here, and the command line's flags, help texts and defaults are made from
it (``raise_plugin.commands.flags.add_flags``); ``tests/test_settings.py`` walks the tree and every parser to hold this.
A default of ``None`` marked ``task_default`` means the task's (``Task.robust_defaults``,
``Task.default_draws``), else ``fallback`` (the paper's).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Iterable


__all__ = ["Setting", "Section", "SettingError", "TREE", "HARNESS", "SETTINGS", "default", "fallback", "section_of",
           "check_settings", "plain_value", "SECTIONS",
           "flatten_tables", "PROJECTIONS", "ENCODINGS", "CONSTRAINTS", "LENGTHS", "TAU_UNITS",
           "PER_REFRESH", "REUSE", "FIGURE_FORMATS"]

PROJECTIONS = ("paper", "sphere", "none")
ENCODINGS = ("basis", "flat")
CONSTRAINTS = ("ball", "none")
LENGTHS = ("gene", "nominal")
TAU_UNITS = ("generations", "samples")
PER_REFRESH = ("one", "draws")  # instances a refresh adds: the representative draw, or every draw
REUSE = ("matching", "never", "any")  # what a compare keeps of an earlier one in its folder (harness.reuse)
FIGURE_FORMATS = ("png", "pdf", "svg")


class SettingError(ValueError):
    """A bad value: ``name`` is the setting's, ``reason`` why (the message is both)."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True)
class Setting:
    """One leaf of the tree. ``kind``: int, float, str, bool, list (comma-separated on the
    command line) or table; ``low``: the least value (``above``: strictly above it); ``unit``:
    what the number counts, shown in the help; ``high``: the greatest value (its help says so);
    ``fallback``: the value a ``task_default`` setting takes when the task has none."""

    name: str
    default: Any
    kind: str
    help: str
    unit: str = ""
    low: float | None = None
    above: bool = False
    high: float | None = None
    choices: tuple = ()
    task_default: bool = False
    fallback: Any = None
    metavar: str | None = None
    shown: str | None = None  # the default in words, where ``default`` is ``None`` ("all", "the task's")
    field: str = ""  # its field in its section's config, where the section has its name: ``budget.samples``
    flag_name: str = ""  # its flag, where that is not its name: ``--price`` gives one entry of the ``prices`` table

    @property
    def field_name(self) -> str:
        """The setting's field in its section's config (``raise_plugin.config``): its name, but for
        ``budget`` (``BudgetSettings.samples``) and ``llm`` (``LLMSettings.backend``)."""
        return self.field or self.name

    @property
    def flag(self) -> str:
        return "--" + (self.flag_name or self.name).replace("_", "-")

    def shown_default(self) -> str:
        """The default as ``--help`` shows it."""
        if self.shown is not None:
            return self.shown
        if self.task_default:
            return "the task's" + (f", else {self.fallback}" if self.fallback is not None else "")
        if self.default is None:
            return "none" if self.fallback is None else f"{self.fallback:g} {self.unit}".rstrip() if isinstance(
                self.fallback, float) else str(self.fallback)
        if self.kind == "bool":
            return "on" if self.default else "off"
        value = ",".join(map(str, self.default)) if isinstance(self.default, tuple) else str(self.default)
        return f"{value} {self.unit}".rstrip()

    def check(self, value: Any) -> Any:
        """``value`` if it is a valid value of this setting (``None`` is one where the default is),
        else ``SettingError`` saying why."""
        if value is None and (self.default is None or self.task_default):
            return value
        kind = {"int": "an integer", "float": "a finite number", "str": "a string", "bool": "true or false",
                "list": "a list", "table": "a table"}[self.kind]
        ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
              "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool),
              "list": lambda v: isinstance(v, (list, tuple)), "table": lambda v: isinstance(v, dict)}[self.kind]
        if not ok(value):
            raise SettingError(self.name, f"must be {kind}, got {value!r}")
        unit = f" {self.unit}" if self.unit else ""
        for item in (value if self.kind == "list" else (value,)):  # a list's items, each named where it is bad
            if not isinstance(item, (int, float)):
                continue
            if self.low is not None and (item <= self.low if self.above else item < self.low):
                raise SettingError(self.name, f"must be {'>' if self.above else '>='} {self.low:g}{unit}, got {item!r}")
            if self.high is not None and item > self.high:
                raise SettingError(self.name, f"must be at most {self.high:g}{unit}, got {item!r}")
        for item in (value if self.kind == "list" else (value,)) if self.choices else ():
            if item not in self.choices:  # each item of a list
                raise SettingError(self.name, f"must be one of {', '.join(self.choices)}, got {item!r}")
        return value


@dataclass(frozen=True)
class Section:
    """A node of the tree: its settings and the sections under it."""

    name: str
    title: str
    children: tuple

    def walk(self, path: tuple = ()) -> Iterable[tuple[tuple, Setting]]:
        """Every setting under this section, with the path of section names above it."""
        here = path + (self.name,)
        for child in self.children:
            if isinstance(child, Section):
                yield from child.walk(here)
            else:
                yield here, child

    def sections(self, path: tuple = ()) -> Iterable[tuple[tuple, "Section"]]:
        """Every section under this one, itself first, with the names of the sections down to it."""
        here = path + (self.name,)
        yield here, self
        for child in self.children:
            if isinstance(child, Section):
                yield from child.sections(here)


def _s(name, default, kind, help, **options) -> Setting:
    return Setting(name, default, kind, help, **options)


TREE = Section("run", "run", (
    _s("task", "obp", "str", "task name, or an own task: FILE.py:CLASS or package.module:CLASS", metavar="TASK"),
    _s("method", "eoh", "str", "outer method (`raise-ahd methods` lists them)", metavar="METHOD"),
    _s("robust", True, "bool", "with RAISE's adversarial inner loop, or without it (a plain run)"),
    _s("seed", 0, "int", "seed of selection, inner search and offline sampler", low=0),
    _s("instance_seed", "private", "str", "seed of the nominal instances a run trains on and of its adversary's "
       "draws, recorded in config.json, which no program reads: 'private' (from the task, the run's seed and this "
       "installation's private key: the same seed, the same run here), 'drawn' (new at every run), 'public' (the "
       "task's fixed seeds, the paper's set, which a program can rebuild from the task's generator) or an integer",
       metavar="SEED"),
    _s("out", None, "str", "output directory", metavar="DIR",
       shown="runs/TASK-METHOD-KIND-seedS-TIME for a run, COMMAND-out for the others"),
    Section("budget", "budget", (
        _s("budget", 1000, "int", "samples N_max (programs the method generates)", unit="samples", low=1,
           field="samples"),
        _s("pop_size", 10, "int", "population size P_max; a host generation is this many samples",
           unit="programs", low=2),
        _s("max_cost_usd", None, "float", "stop cleanly once the LLM cost reaches this: no request starts past it "
           "(the model needs a price: the built-in table or --price); resume with a higher cap continues",
           unit="dollars", low=0, above=True, metavar="DOLLARS", shown="no cap"),
        _s("max_llm_calls", None, "int", "the endpoint receives at most N requests, retries included; the run then "
           "stops cleanly (resume with a higher cap continues)", unit="requests", low=1, metavar="N", shown="no cap"),
        _s("max_failed_requests", 10, "int", "stop the run as failed (exit 3) after N LLM requests in a row that "
           "gave no usable program", unit="requests", low=1, metavar="N"),
    )),
    Section("adversary", "adversary (RAISE's inner loop)", (
        _s("epsilon", None, "float", "radius eps of the ball around the nominal distributions", low=0, above=True,
           task_default=True, fallback=0.002, metavar="EPS"),
        _s("tau", 5, "int", "refresh interval: a refresh every tau generations (or samples: --tau-unit)", low=1),
        _s("tau_unit", "generations", "str", "what tau counts: generations (pop-size samples each) or samples "
           "(the paper's 40 refreshes per 1000 samples: --tau 25 --tau-unit samples)", choices=TAU_UNITS),
        _s("allow_no_refresh", False, "bool", "start a robust run even when its budget ends before its first "
           "refresh (it then trains as a plain run would); without it such a run is refused, with the budget or "
           "tau that fixes it"),
        _s("aggregation", None, "str", "A over the instance set: mean, min, cvar:ALPHA or balanced[:W], each "
           "optionally after regret: (against the best baseline per instance) or regret:NAME: (one baseline)",
           task_default=True, fallback="mean", metavar="RULE"),
        _s("max_adversarial", 10, "int", "adversarial instances kept (a sliding window)", unit="instances", low=1),
        _s("instances_per_refresh", "one", "str", "one (the paper's: the representative draw of the distribution a "
           "refresh finds) or draws (all --inner-draws of it; widen --max-adversarial to match)",
           choices=PER_REFRESH),
        _s("nominal", None, "int", "use only the first N nominal instances (at most the task's)", unit="instances", low=1,
           shown="all"),
        _s("adversary_objective", None, "str", "what the inner search maximises: metric (the paper's), "
           "regret:baselines, regret:NAME or regret:population[:K]", task_default=True, fallback="metric",
           metavar="OBJECTIVE"),
        Section("inner_search", "inner search", (
            _s("inner_population", 8, "int", "P_in: candidate distributions per inner generation",
               unit="distributions", low=2),
            _s("inner_generations", 4, "int", "G_in: generations of the inner search", unit="generations", low=1),
            _s("inner_draws", None, "int", "instances R each candidate distribution is scored on", unit="instances",
               low=1, task_default=True),
            _s("projection", None, "str", "the eps-projection: paper, sphere or none", choices=PROJECTIONS,
               task_default=True, fallback="paper"),
            _s("encoding", None, "str", "basis (the nine-basis mixture) or flat (cells perturbed directly)",
               choices=ENCODINGS, fallback="basis"),
            _s("constraint", None, "str", "ball (anchored at the nominal histogram, projected) or none",
               choices=CONSTRAINTS, fallback="ball"),
            _s("length", None, "str", "adversarial instance length: gene (the paper's: scaled by 0.9-1.1) or "
               "nominal (fixed)", choices=LENGTHS, fallback="gene"),
        )),
    )),
    Section("llm", "LLM", (
        _s("llm", "offline", "str", "offline (no LLM: the offline sampler), openai[:MODEL], replay:FILE (a run's "
           "recorded prompts and answers) or replay:RUN_DIR (a run again: its recorded settings are the defaults, its "
           "answers replayed)",
           metavar="BACKEND", field="backend"),
        _s("base_url", None, "str", "the OpenAI-compatible endpoint of --llm openai: recorded in config.json when "
           "the run starts, and what resume uses", metavar="URL", shown="OPENAI_BASE_URL, else the OpenAI API"),
        _s("record", None, "str", "record every prompt and response to this JSONL file (replay it with "
           "--llm replay:FILE)", metavar="FILE", shown="none"),
        _s("prices", None, "table", "models added to the price table: model -> [input, output] dollars per "
           "million tokens (on the command line one model a flag, repeatable: --price MODEL=IN,OUT)",
           flag_name="price"),
        _s("max_tokens", None, "int", "completion tokens per LLM request, sent to the endpoint", unit="tokens",
           low=1, metavar="N", shown="the endpoint's own limit"),
        _s("llm_timeout", None, "float", "seconds one LLM request may take, its whole answer included, at most a "
           "day; past it the request failed (and is retried)", unit="seconds", low=0, above=True, high=86400,
           metavar="SECONDS", fallback=120.0),
        _s("num_samplers", 1, "int", "sampler threads (with more, the order of samples depends on thread timing)",
           unit="threads", low=1),
    )),
    Section("engine", "evaluation engine", (
        _s("executor", None, "str", "where evaluations (compare: jobs) run: process[:N] (sandboxed workers, one "
           "per core), serial, dask://HOST:PORT or dask://local[:N]", metavar="WHERE", shown="process"),
        _s("workers", None, "int", "evaluation worker processes, at most 8 per core this process may use (more "
           "start as that many, with a note: a run's results do not depend on its workers)", unit="processes", low=1,
           shown="one per core; a compare job's share"),
        _s("num_evaluators", 1, "int", "evaluation threads of the host (the sandboxed engine uses its workers "
           "whatever this says)", unit="threads", low=1),
        _s("programs_in_flight", 1, "int", "programs evaluated at once: sample n is drawn once sample n-k is "
           "registered, and samples are registered in order, so a run depends on k but not on the workers or "
           "the executor (EoH family; docs/engine.md)", unit="programs", low=1, metavar="K"),
        _s("jit", False, "bool", "run each program compiled (numba: pip install 'numba>=0.61') where its "
           "decisions on the task's probe instances equal its Python function's; its look-ahead check runs "
           "compiled too (docs/engine.md)"),
        _s("jit_after", 0.5, "float", "with --jit: compile a program once its evaluations in a worker took this "
           "long in Python (0: at once)", unit="seconds", low=0, metavar="SECONDS"),
        _s("early_reject", True, "bool", "stop a candidate's evaluation once it provably cannot enter the "
           "population (min, cvar; the same samples, populations and best either way)"),
        _s("host_profiler", True, "bool", "also write the host's EoHProfiler logs to RUN_DIR/host"),
        _s("validation_trace", True, "bool", "trace the best program's validation metric in "
           "RUN_DIR/validation.jsonl every tau generations"),
        Section("sandbox", "sandbox (what one evaluation of a program may use)", (
            _s("timeout", None, "float", "seconds allowed per evaluation of one instance, at most 604800 (a week)",
               unit="seconds", low=0, above=True, high=604800, metavar="SECONDS", shown="the task's"),
            _s("memory_mb", 2048, "int", "memory a program's process may add to its size at start, and the "
               "worker's own budget (RLIMIT_DATA; docs/engine.md), at most 524288 (512 GB)", unit="MB",
               low=16, high=2 ** 19, metavar="MB"),
            _s("file_mb", 16, "int", "largest file a program may write (RLIMIT_FSIZE), at most 524288 (512 "
               "GB)", unit="MB", low=0, high=2 ** 19, metavar="MB"),
            _s("output_mb", 10, "float", "what a program may print per evaluation; past it the evaluation is "
               "invalid", unit="MB", low=0, metavar="MB"),
        )),
    )),
))

HARNESS = Section("harness", "harness (compare, profile, rerank, evaluate, select)", (
    _s("methods", ("eoh",), "list", "methods to train, comma-separated (`raise-ahd methods` lists them)"),
    _s("epsilons", None, "list", "radii eps of the robust runs (compare; an empty list: plain runs only) or of the "
       "profile (where the default is 0.001,0.002,0.005,0.01), comma-separated",
       low=0, above=True, task_default=True, fallback=0.002),
    _s("ablations", False, "bool", "also run the paper's three component ablations and the regret and balanced "
       "rows"),
    _s("seeds", 5, "int", "seeds 0..N-1 of the runs, at most 1000 (fewer than 5 cannot tell most differences from "
       "seed noise)", unit="seeds", low=1, high=1000),
    _s("suite_instances", None, "int", "at most N instances per test dataset", unit="instances", low=1,
       shown="all"),
    _s("select_on", None, "str", "each run's final program: robust (its robust best) or validation (best on "
       "the validation suite)", choices=("robust", "validation"), task_default=True, fallback="robust",
       metavar="{robust,validation}"),
    _s("jobs", None, "int", "training and evaluation jobs at once, each in its own process (1 runs them one "
       "after another in this process)", unit="jobs", low=1, shown="half the cores"),
    _s("ship_runs", None, "bool", "send each run directory back to --out as an archive",
       shown="only from workers that do not see --out"),
    _s("reuse", "matching", "str", "what of an earlier compare in --out is kept: matching (a finished run or "
       "result whose every setting and code version match), never (all done again) or any (as matching, of "
       "another code version too; the report lists them); what is not kept moves to OUT/superseded",
       choices=REUSE),
    _s("figure_formats", ("png", "pdf"), "list", "the files each of a compare's figures is written as, "
       "comma-separated (PNG for the report, PDF for a paper)", choices=FIGURE_FORMATS, metavar="FORMATS"),
    _s("adversary_seeds", 3, "int", "adversary seeds per radius (profile), at most 1000", unit="seeds", low=1,
       high=1000),
    _s("compare", "", "str", "comma-separated baselines to profile alongside, or 'all'", shown="none",
       metavar="NAMES"),
    _s("refreshes", 3, "int", "adversarial instances rerank adds", unit="instances", low=1),
    _s("top", 20, "int", "programs rerank re-ranks, best first", unit="programs", low=2),
    _s("suite", "test", "str", "the suite to evaluate on", choices=("nominal", "validation", "test")),
    _s("baselines", "all", "str", "baselines evaluated beside: all (the paper's), classical (every classical "
       "rule of the task), none or comma-separated names"),
    _s("per_dataset", 1, "int", "validation instances per dataset (select)", unit="instances", low=1),
    _s("progress", True, "bool", "show progress: a bar on a terminal or in a notebook, a plain line every 30 s "
       "in a log or a pipe (the environment variable RAISE_PROGRESS=bar, lines, off or auto chooses which; "
       "docs/progress.md)"),
))

SETTINGS: dict[str, Setting] = {}
_SECTION: dict[str, tuple] = {}
for _tree in (TREE, HARNESS):
    for _path, _setting in _tree.walk():
        if _setting.name in SETTINGS:  # pragma: no cover - a tree with a name twice is a bug
            raise RuntimeError(f"setting {_setting.name!r} is in the tree twice")
        SETTINGS[_setting.name] = _setting
        _SECTION[_setting.name] = _path


def check_settings(values: dict[str, Any]) -> None:
    """Each value of ``values`` (setting name -> value) against its setting; the first bad one
    is a ``SettingError``."""
    for name, value in values.items():
        SETTINGS[name].check(value)


def plain_value(value: Any) -> Any:
    """``value`` with numpy's scalars (a notebook's ``np.int64(4)``, ``np.float32(0.5)``, ``np.True_``), in a list
    or tuple too, as Python's bool, int and float: what every setting's check and ``config.json`` take."""
    if isinstance(value, (list, tuple)):
        return type(value)(plain_value(item) for item in value)
    if type(value) in (bool, int, float) or not hasattr(value, "dtype"):
        return value
    if value.dtype.kind == "b":
        return bool(value)
    return int(value) if isinstance(value, Integral) else float(value) if isinstance(value, Real) else value


def default(name: str) -> Any:
    """The default of setting ``name``, written once, here."""
    return SETTINGS[name].default


def fallback(name: str) -> Any:
    """What a ``task_default`` setting takes when the task has no default of its own (the paper's)."""
    return SETTINGS[name].fallback


def section_of(name: str) -> tuple:
    """The path of sections above setting ``name``: ``("run", "adversary", "inner_search")``."""
    return _SECTION[name]


def flatten_tables(data: dict, source: str, table: tuple = ()) -> dict:
    """A TOML document's settings, flat: a table named after a section of the tree
    (``[adversary]``, ``[adversary.inner_search]``, ``[run]``) holds that section's settings and
    those of the sections under it; a setting of another section there is a ``SettingError``
    naming its table (an unknown key is left for the caller to refuse)."""
    sections = {name for path in _SECTION.values() for name in path}
    flat: dict = {}
    for key, value in data.items():
        if key in sections and isinstance(value, dict):
            for inner_key, inner_value in flatten_tables(value, source, table + (key,)).items():
                if inner_key in flat:
                    raise SettingError(inner_key, f"given twice in {source}")
                flat[inner_key] = inner_value
        elif key in flat:
            raise SettingError(key, f"given twice in {source}")
        else:
            if table and key in _SECTION and not _within(_SECTION[key], table):
                raise SettingError(key, f"is a setting of [{'.'.join(_SECTION[key][1:]) or _SECTION[key][0]}], "
                                        f"not of [{'.'.join(table)}] where {source} puts it")
            flat[key] = value
    return flat


def _within(path: tuple, table: tuple) -> bool:
    """Whether the sections ``table`` names, in turn, are among those above a setting (``path``)."""
    return any(path[i:i + len(table)] == table for i in range(len(path) - len(table) + 1))


SECTIONS = {section.name: section for tree in (TREE, HARNESS) for _, section in tree.sections()}
