"""``RunConfig``: the settings of one run, from a TOML file and/or CLI flags, each value checked on
creation for what it is; what a value names (a task, a method, a baseline, a replay source, an
executor) is checked where the run uses it (``raise_plugin.resolve``)."""
from __future__ import annotations

import copy
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, NoReturn
from urllib.parse import urlsplit

from .errors import UserError, unexpected_keyword
from .settings import SETTINGS, TREE, SettingError, default, fallback, flatten_tables

__all__ = ["RunConfig", "BudgetSettings", "AdversarySettings", "InnerSearchSettings", "LLMSettings", "EngineSettings",
           "SandboxSettings", "Settings", "ConfigError", "SANDBOX_LIMITS",
           "RECORDED_ORDER", "check_setting", "bad_field"]


class ConfigError(UserError):
    """A bad config value; the message names the field (``field`` and ``reason`` too, where a check
    gave them, for a caller that names the setting its own way)."""

    def __init__(self, message: str, field: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.field, self.reason = field, reason


# the sandbox's limits a run, an evaluation and a compare set (``SandboxLimits`` fields of the same names)
SANDBOX_LIMITS = ("memory_mb", "file_mb", "output_mb")

# the order of a run's settings in its ``config.json`` (recorded runs are read back in it)
RECORDED_ORDER = (
    "task", "method", "robust", "epsilon", "tau", "allow_no_refresh", "inner_population", "inner_generations",
    "aggregation", "max_adversarial", "budget", "pop_size", "llm", "base_url", "seed", "instance_seed", "out",
    "num_samplers", "num_evaluators", "programs_in_flight", "nominal", "timeout", "memory_mb", "file_mb", "output_mb",
    "projection", "encoding", "constraint", "length", "host_profiler", "early_reject", "record", "executor", "workers",
    "adversary_objective", "inner_draws", "tau_unit", "max_cost_usd", "max_llm_calls", "prices", "max_tokens",
    "llm_timeout", "max_failed_requests", "validation_trace", "instances_per_refresh", "jit", "jit_after")


@dataclass(frozen=True)
class Settings:
    """One section of the tree as a frozen config: a field per setting of the section (named as the
    setting, ``Setting.field_name``), each checked on creation, and a field per section under it."""

    def __post_init__(self):
        for f in fields(self):
            if not _is_section(f):
                check_setting(f.metadata["setting"], getattr(self, f.name))

    @classmethod
    def of(cls, flat: Mapping[str, Any]):
        """The section of the settings ``flat`` (setting name -> value) gives; the rest at their defaults."""
        return cls(**{f.name: f.default_factory.of(flat) if _is_section(f) else flat[f.metadata["setting"]]
                      for f in fields(cls) if _is_section(f) or f.metadata["setting"] in flat})

    def with_unset(self, values: Mapping[str, Any]):
        """This section with each setting it leaves unset (``None``) taken from ``values`` (setting
        name -> value), and each section under it likewise."""
        changes = {f.name: getattr(self, f.name).with_unset(values) if _is_section(f) else values[f.metadata["setting"]]
                   for f in fields(self)
                   if _is_section(f) or (getattr(self, f.name) is None and f.metadata["setting"] in values)}
        return replace(self, **changes)

    def flat(self) -> dict[str, Any]:
        """This section's settings and those of the sections under it, by setting name."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out = {**out, **(value.flat() if _is_section(f) else {f.metadata["setting"]: value})}
        return out


def _setting(name: str) -> Any:
    """The field of setting ``name``: its default, and which setting it is."""
    return field(default=default(name), metadata={"setting": name})


def _section(cls: type) -> Any:
    return field(default_factory=cls)


def _is_section(f) -> bool:
    return isinstance(f.default_factory, type) and issubclass(f.default_factory, Settings)


@dataclass(frozen=True)
class BudgetSettings(Settings):
    """``budget``: what a run may spend; ``samples`` is the setting ``budget`` (N_max)."""

    samples: int = _setting("budget")
    pop_size: int = _setting("pop_size")
    max_cost_usd: float | None = _setting("max_cost_usd")
    max_llm_calls: int | None = _setting("max_llm_calls")
    max_failed_requests: int = _setting("max_failed_requests")


@dataclass(frozen=True)
class InnerSearchSettings(Settings):
    """``adversary.inner_search``: one inner search (P_in, G_in, R and its switches)."""

    inner_population: int = _setting("inner_population")
    inner_generations: int = _setting("inner_generations")
    inner_draws: int | None = _setting("inner_draws")
    projection: str | None = _setting("projection")
    encoding: str | None = _setting("encoding")
    constraint: str | None = _setting("constraint")
    length: str | None = _setting("length")

    def switches(self) -> dict[str, Any]:
        """The search's switches that differ from its defaults (the paper's)."""
        return {k: getattr(self, k) for k in ("projection", "encoding", "constraint", "length")
                if getattr(self, k) not in (None, fallback(k))}


@dataclass(frozen=True)
class AdversarySettings(Settings):
    """``adversary``: RAISE's inner loop (eps, tau, A, the window, the objective) and its inner search.
    ``epsilon``, ``aggregation`` and ``adversary_objective`` left unset (``None``) are the task's
    (``resolve.with_task_defaults``)."""

    epsilon: float | None = _setting("epsilon")
    tau: int = _setting("tau")
    tau_unit: str = _setting("tau_unit")
    allow_no_refresh: bool = _setting("allow_no_refresh")
    aggregation: str | None = _setting("aggregation")
    max_adversarial: int = _setting("max_adversarial")
    instances_per_refresh: str = _setting("instances_per_refresh")
    nominal: int | None = _setting("nominal")
    adversary_objective: str | None = _setting("adversary_objective")
    inner_search: InnerSearchSettings = _section(InnerSearchSettings)


@dataclass(frozen=True)
class LLMSettings(Settings):
    """``llm``: the LLM back-end and its endpoint; ``backend`` is the setting ``llm`` (``offline``,
    ``openai[:MODEL]``, ``replay:SOURCE``)."""

    backend: str = _setting("llm")
    base_url: str | None = _setting("base_url")
    record: str | None = _setting("record")
    prices: dict | None = _setting("prices")
    max_tokens: int | None = _setting("max_tokens")
    llm_timeout: float | None = _setting("llm_timeout")
    num_samplers: int = _setting("num_samplers")

    def __post_init__(self):
        super().__post_init__()
        if self.prices is not None:
            for model, pair in self.prices.items():
                if not isinstance(model, str) or not model.strip():  # "" would price every model (by prefix)
                    bad_field("prices", self.prices, "each entry names a model (MODEL=IN,OUT)")
                if (not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1e6 for x in pair)):
                    bad_field("prices", self.prices, f"entry {model!r} must be [input, output] dollars per million "
                                                     "tokens, both from 0 to 1e6")
        if not (self.backend == "offline" or self.backend.startswith(("openai", "replay:"))):
            bad_field("llm", self.backend, "use offline, openai[:MODEL], replay:FILE or replay:RUN_DIR")
        if self.backend.startswith("replay:") and not self.replayed:
            bad_field("llm", self.backend, "replay needs a recording: replay:FILE or replay:RUN_DIR")
        if self.base_url is not None:
            if not self.backend.startswith("openai"):
                bad_field("base_url", self.base_url,
                          f"only an openai back-end has an endpoint (llm is {self.backend!r})")
            parts = urlsplit(self.base_url)
            try:
                port = parts.port  # a port that is no number, or past 65535: a ValueError
            except ValueError:
                port = -1
            if parts.scheme.lower() not in ("http", "https") or not parts.hostname or port == -1:
                shown = re.sub(r"//[^/@]*@", "//***@", self.base_url)  # its credentials never shown
                raise ConfigError(f"config field 'base_url': must be an http:// or https:// URL with a host (and "
                                  f"a port of at most 65535), got {shown!r}", "base_url")

    @property
    def kind(self) -> str:
        """``offline``, ``openai`` or ``replay``."""
        return self.backend.split(":", 1)[0]

    @property
    def replayed(self) -> str | None:
        """What a replay reads (``SOURCE`` of ``replay:SOURCE``: a recording or a run directory), else None."""
        return self.backend.partition(":")[2] if self.kind == "replay" else None


@dataclass(frozen=True)
class SandboxSettings(Settings):
    """``engine.sandbox``: what one evaluation of a program may use."""

    timeout: float | None = _setting("timeout")
    memory_mb: int = _setting("memory_mb")
    file_mb: int = _setting("file_mb")
    output_mb: float = _setting("output_mb")

    def set_apart(self) -> dict[str, Any]:
        """The limits apart from the engine's own (memory, file size, output; ``SandboxLimits``'s names)."""
        return {name: getattr(self, name) for name in SANDBOX_LIMITS if getattr(self, name) != default(name)}


@dataclass(frozen=True)
class EngineSettings(Settings):
    """``engine``: where and how programs are evaluated, and the sandbox of each evaluation."""

    executor: str | None = _setting("executor")
    workers: int | None = _setting("workers")
    num_evaluators: int = _setting("num_evaluators")
    programs_in_flight: int = _setting("programs_in_flight")
    jit: bool = _setting("jit")
    jit_after: float = _setting("jit_after")
    early_reject: bool = _setting("early_reject")
    host_profiler: bool = _setting("host_profiler")
    validation_trace: bool = _setting("validation_trace")
    sandbox: SandboxSettings = _section(SandboxSettings)

    def evaluation_executor(self) -> str | None:
        """Where the run's programs are evaluated: ``executor``, or ``process:workers``."""
        return self.executor if self.workers is None else f"process:{self.workers}"

    def sandbox_limits(self) -> dict[str, Any]:
        """The sandbox's limits this run sets apart from the engine's own (``SandboxLimits``), and the
        compiled path; the time per instance goes with the evaluation (``timeout``)."""
        return {**self.sandbox.set_apart(), **({"jit": True, "jit_after": self.jit_after} if self.jit else {})}


def check_setting(name: str, value: Any) -> None:
    """``value`` against setting ``name`` in the tree (kind, least value, choices): a ``ConfigError``."""
    try:
        SETTINGS[name].check(value)
    except SettingError as exc:
        raise ConfigError(f"config field {name!r}: {exc.reason}", name, exc.reason) from None


def check_names(names, source: str) -> None:
    """Each of ``names`` a run's setting: else a ``ConfigError`` naming the first unknown one and ``source``."""
    unknown = sorted(set(names) - _RUN_SETTINGS)
    if unknown:
        raise ConfigError(f"{source}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_RUN_SETTINGS))})")


def bad_field(name: str, value: Any, why: str) -> NoReturn:
    """Raise the one-line ``ConfigError`` of config field ``name``: ``why``, then the value given."""
    raise ConfigError(f"config field {name!r}: {why}, got {value!r}", name, f"{why}, got {value!r}")


# the run's sections, by the tree's names; the run's own settings (task, method, ...) are RunConfig's fields
SECTIONS = {"budget": BudgetSettings, "adversary": AdversarySettings, "llm": LLMSettings, "engine": EngineSettings}


@dataclass(frozen=True, init=False)
class RunConfig:
    """One run of a (robust) method on a task: the settings of the tree's ``run`` section (docs/settings.md
    lists each with its default, unit and meaning), each checked on creation against its setting; what a
    value names is checked when a run starts, before it writes anything (``raise_plugin.resolve.resolve``).

    The run's own settings (``task``, ``method``, ``robust``, ``seed``, ``instance_seed``,
    ``out``) are fields; every section of the tree under ``run`` is one frozen config
    (``budget``, ``adversary`` with its ``inner_search``, ``llm``, ``engine`` with its
    ``sandbox``), read by section (``config.adversary.epsilon``) and handed whole to the part
    it configures. It is made from the settings by name, flat (``RunConfig(task="obp",
    budget=40, epsilon=0.01)``), from sections (``RunConfig(adversary=AdversarySettings(...))``),
    or both (the named settings over the sections); ``to_dict`` gives it flat again, as
    ``config.json`` records it. Two settings are named as their section, and their field there
    says what they are: ``budget.samples`` (the setting ``budget``) and ``llm.backend`` (``llm``).

    ``robust=False`` runs the same wrapped method without the inner loop, so plain and robust
    runs differ only by the adversarial callback. ``epsilon``, ``aggregation``,
    ``adversary_objective`` and ``projection`` left unset (``None``) take the task's robust
    defaults (``Task.robust_defaults``, chosen on its validation suite), else the paper's (eps
    0.002, mean, metric, paper), when the run starts (``resolve.with_task_defaults``); the
    resolved values are what the run directory's ``config.json`` records. ``max_llm_calls``
    counts requests, retries included: the endpoint receives at most that many.
    ``early_reject`` never changes a run's samples, populations or best (docs/robust.md); ``jit``
    compiles a program only where its decisions on the task's probe instances equal its Python
    function's. ``base_url`` (an ``openai`` back-end's endpoint) is recorded in ``config.json`` when
    the run starts, so ``resume_run`` calls the endpoint the run started with (never the API key).
    """

    task: str = default("task")
    method: str = default("method")
    robust: bool = default("robust")
    seed: int = default("seed")
    instance_seed: str = default("instance_seed")
    out: str | None = default("out")
    budget: BudgetSettings = field(default_factory=BudgetSettings)
    adversary: AdversarySettings = field(default_factory=AdversarySettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)

    def __init__(self, **settings: Any):
        flat: dict[str, Any] = {}
        for name, cls in SECTIONS.items():  # sections given whole first, the settings named over them
            if isinstance(settings.get(name), Settings):
                section = settings.pop(name)
                if not isinstance(section, cls):
                    raise TypeError(f"RunConfig: {name} must be {cls.__name__}, got {type(section).__name__}")
                flat = {**flat, **section.flat()}
        for name in sorted(set(settings) - _RUN_SETTINGS)[:1]:
            raise unexpected_keyword("RunConfig", name, _RUN_SETTINGS | set(SECTIONS))
        if flat and {"budget", "llm"} & set(settings):  # dataclasses.replace(config, budget=N): the rest would reset
            raise TypeError("RunConfig: budget or llm as one setting beside whole sections: use config.replace(...)")
        flat = {**flat, **settings}
        if type(flat.get("instance_seed")) is int:  # the setting's "or an integer": recorded as its digits
            flat["instance_seed"] = str(flat["instance_seed"])
        for name in _PATHS:  # a path as its text, as config.json records it
            if isinstance(flat.get(name), os.PathLike):
                flat[name] = os.fspath(flat[name])
        for name in _OWN:
            object.__setattr__(self, name, flat.get(name, default(name)))
        for name, cls in SECTIONS.items():
            object.__setattr__(self, name, cls.of(flat))
        self.__post_init__()

    def __post_init__(self):
        seed = self.instance_seed  # a float or a boolean is told what the flag tells "1.5", not "a string"
        if not isinstance(seed, str) or (seed not in ("private", "drawn", "public")
                                         and not (seed.isdigit() and len(seed) <= 19)):
            bad_field("instance_seed", seed, "must be 'private', 'drawn', 'public' or a non-negative integer")
        for name in _OWN:
            check_setting(name, getattr(self, name))
        if self.engine.programs_in_flight > 1 and self.llm.num_samplers > 1:
            bad_field("programs_in_flight", self.engine.programs_in_flight, "with more than one program in flight the "
                      f"samples are drawn in as many lanes of their own: num_samplers must be 1 (it is "
                      f"{self.llm.num_samplers})")

    def replace(self, **changes: Any) -> "RunConfig":
        """This config with ``changes`` (settings by name, or sections whole) over it."""
        flat = self.to_dict()
        for name, value in changes.items():
            flat = {**flat, **(value.flat() if isinstance(value, Settings) else {name: value})}
        return RunConfig(**flat)

    def with_unset(self, values: Mapping[str, Any]) -> "RunConfig":
        """This config with each setting it leaves unset (``None``) taken from ``values`` (setting
        name -> value), section by section (``Settings.with_unset``)."""
        return RunConfig(**{name: getattr(self, name) for name in _OWN},
                         **{name: getattr(self, name).with_unset(values) for name in SECTIONS})

    # -- loading ---------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "config") -> "RunConfig":
        data = {k.replace("-", "_"): v for k, v in data.items()}
        check_names(data, source)
        return cls(**data)  # every setting has a default, and a flat mapping holds no section whole

    @classmethod
    def from_toml(cls, path: str | Path, **overrides) -> "RunConfig":
        """Settings from a TOML file (top level, or in tables named after the tree's sections:
        ``[budget]``, ``[adversary]``, ``[adversary.inner_search]``, ``[llm]``, ``[engine]``,
        ``[engine.sandbox]``), then ``overrides`` (not ``None``)."""
        data = cls.settings_in_toml(path)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(data, source=str(path))

    @staticmethod
    def settings_in_toml(path: str | Path) -> dict[str, Any]:
        """The settings a TOML file gives, flat (not checked yet)."""
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8-sig"))  # a byte-order mark first (Notepad) is read past
        except OSError as exc:
            raise ConfigError(f"cannot read config file {p}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p}: {exc}") from None
        try:  # the tree's sections as tables ([run], [adversary], [adversary.inner_search], ...), or flat
            return flatten_tables(data, str(p))
        except SettingError as exc:
            raise ConfigError(f"config file {p}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """Every setting by name, flat, in the order ``config.json`` records them."""
        flat = {name: getattr(self, name) for name in _OWN}
        for section in (self.budget, self.adversary, self.llm, self.engine):
            flat = {**flat, **section.flat()}
        return copy.deepcopy({name: flat[name] for name in RECORDED_ORDER})

    @property
    def nominal_seed(self) -> int | None:
        """The seed of the nominal instances (``None``: the task's public set); a run resolves
        ``private`` and ``drawn`` to a number before it starts (``runner.start_run``)."""
        return int(self.instance_seed) if self.instance_seed.isdigit() else None

    @property
    def adversary_seed(self) -> int:
        """The seed of the adversary's searches and draws: the run's own ``seed`` with the public
        instances (as before the instances had a seed of their own), else mixed with
        ``nominal_seed``, so that no program can compute the instances a refresh adds."""
        if self.nominal_seed is None:
            return self.seed
        mixed = hashlib.sha256(f"{self.seed}:{self.nominal_seed}".encode()).digest()
        return int.from_bytes(mixed[:4], "little")


_RUN_SETTINGS = {setting.name for _, setting in TREE.walk()}
_OWN = tuple(setting.name for path, setting in TREE.walk() if path == ("run",))  # task, method, robust, ...
_PATHS = ("out", "record")  # the settings that name a file or a folder: a path-like is taken as its text
