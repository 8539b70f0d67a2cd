"""``RunConfig``: the settings of one run, from a TOML file and/or CLI flags, each value checked on
creation for what it is; what a value names (a task, a method, a baseline, a replay source, an
executor) is checked where the run uses it (``raise_plugin.resolve``)."""
from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .errors import PluginWarning, UserError
from .settings import SETTINGS, SettingError, default, fallback, flatten_tables

__all__ = ["RunConfig", "ConfigError", "IdleAdversaryWarning", "idle_adversary", "SANDBOX_LIMITS"]


class ConfigError(UserError):
    """A bad config value; the message names the field."""


class IdleAdversaryWarning(PluginWarning):
    """A robust run whose budget allows no refresh: its adversary never runs."""


def idle_adversary(budget: int, pop_size: int, tau: int, tau_unit: str = default("tau_unit")) -> str | None:
    """Why a robust run of ``budget`` samples can never refresh its instance set, or ``None``. A
    host generation is ``pop_size`` samples; a refresh comes at the end of every ``tau``-th
    generation (``tau_unit="generations"``) or of the first generation after ``tau`` samples."""
    generations = budget // pop_size
    if tau_unit == "samples":
        if generations and generations * pop_size >= tau:
            return None
        needed = max(1, math.ceil(tau / pop_size)) * pop_size
        return (f"budget {budget} at pop_size {pop_size} ends its last generation after {generations * pop_size} "
                f"samples, before tau {tau} samples: the adversary never runs and this robust run is a plain one; "
                f"raise budget to {needed}" + (f" or lower tau to {generations * pop_size}" if generations else ""))
    if generations >= tau:
        return None
    return (f"budget {budget} at pop_size {pop_size} makes {generations} host generations, fewer than tau {tau}: "
            f"the adversary never runs and this robust run is a plain one; raise budget to {tau * pop_size}"
            + (f" or lower tau to {generations}" if generations else ""))


# the sandbox's limits a run, an evaluation and a compare set (``SandboxLimits`` fields of the same names)
SANDBOX_LIMITS = ("memory_mb", "file_mb", "output_mb")

@dataclass(frozen=True)
class RunConfig:
    """One run of a (robust) method on a task: the settings of the tree's ``run`` section
    (``raise_plugin.settings``; docs/settings.md lists each with its default, unit and meaning),
    one field per setting, each checked on creation against its setting; what a value names is
    checked when a run starts, before it writes anything (``raise_plugin.resolve.resolve``).

    ``robust=False`` runs the same wrapped method without the inner loop, so plain and robust
    runs differ only by the adversarial callback. ``epsilon``, ``aggregation``,
    ``adversary_objective`` and ``projection`` left unset (``None``) take the task's robust
    defaults (``Task.robust_defaults``, chosen on its validation suite), else the paper's (eps
    0.002, mean, metric, paper), when the run starts (``resolve.with_task_defaults``); the
    resolved values are what the run directory's ``config.json`` records. ``max_llm_calls``
    counts requests, retries included: the endpoint receives at most that many.
    ``early_reject`` never changes a run's samples, populations or best (docs/robust.md); ``jit``
    compiles a program only where its decisions on the task's probe instances equal its Python
    function's.
    ``base_url`` (an ``openai`` back-end's endpoint) is resolved when the run starts and recorded
    in ``config.json``, so ``resume_run`` calls the endpoint the run started with (the API key is
    never recorded); ``raise_plugin.replay.replaying(RUN_DIR, **overrides)`` takes a recorded
    run's settings and replays its answers, reproducing it.
    """

    task: str = default("task")
    method: str = default("method")
    robust: bool = default("robust")
    epsilon: float | None = default("epsilon")
    tau: int = default("tau")
    allow_no_refresh: bool = default("allow_no_refresh")
    inner_population: int = default("inner_population")
    inner_generations: int = default("inner_generations")
    aggregation: str | None = default("aggregation")
    max_adversarial: int = default("max_adversarial")
    budget: int = default("budget")
    pop_size: int = default("pop_size")
    llm: str = default("llm")
    base_url: str | None = default("base_url")
    seed: int = default("seed")
    instance_seed: str = default("instance_seed")
    out: str | None = default("out")
    num_samplers: int = default("num_samplers")
    num_evaluators: int = default("num_evaluators")
    programs_in_flight: int = default("programs_in_flight")
    nominal: int | None = default("nominal")
    timeout: float | None = default("timeout")
    memory_mb: int = default("memory_mb")
    file_mb: int = default("file_mb")
    output_mb: float = default("output_mb")
    projection: str | None = default("projection")
    encoding: str | None = default("encoding")
    constraint: str | None = default("constraint")
    length: str | None = default("length")
    host_profiler: bool = default("host_profiler")
    early_reject: bool = default("early_reject")
    record: str | None = default("record")
    executor: str | None = default("executor")
    workers: int | None = default("workers")
    adversary_objective: str | None = default("adversary_objective")
    inner_draws: int | None = default("inner_draws")
    tau_unit: str = default("tau_unit")
    max_cost_usd: float | None = default("max_cost_usd")
    max_llm_calls: int | None = default("max_llm_calls")
    prices: dict | None = default("prices")
    max_tokens: int | None = default("max_tokens")
    llm_timeout: float | None = default("llm_timeout")
    max_failed_requests: int = default("max_failed_requests")
    validation_trace: bool = default("validation_trace")
    instances_per_refresh: str = default("instances_per_refresh")
    jit: bool = default("jit")
    jit_after: float = default("jit_after")

    def __post_init__(self):
        def bad(name, why):
            raise ConfigError(f"config field {name!r}: {why}, got {getattr(self, name)!r}")

        for f in fields(self):  # each value against its setting in the tree: kind, least value, choices
            try:
                SETTINGS[f.name].check(getattr(self, f.name))
            except SettingError as exc:
                raise ConfigError(f"config field {f.name!r}: {exc.reason}") from None
        if self.prices is not None:
            for model, pair in self.prices.items():
                if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in pair)):
                    bad("prices", f"entry {model!r} must be [input, output] dollars per million tokens, both >= 0")
        if self.instance_seed not in ("private", "drawn", "public") and not (self.instance_seed.isdigit()
                                                                              and len(self.instance_seed) <= 19):
            bad("instance_seed", "must be 'private', 'drawn', 'public' or a non-negative integer")
        if not (self.llm == "offline" or self.llm.startswith(("openai", "replay:"))):
            bad("llm", "use offline, openai[:MODEL], replay:FILE or replay:RUN_DIR")
        if self.llm.startswith("replay:") and not self.llm.partition(":")[2]:
            bad("llm", "replay needs a recording: replay:FILE or replay:RUN_DIR")
        if self.programs_in_flight > 1 and self.num_samplers > 1:
            bad("programs_in_flight", f"with more than one program in flight the samples are drawn in as many lanes "
                                      f"of their own: num_samplers must be 1 (it is {self.num_samplers})")
        if self.base_url is not None:
            if not self.llm.startswith("openai"):
                bad("base_url", f"only an openai back-end has an endpoint (llm is {self.llm!r})")
            if not self.base_url.startswith(("http://", "https://")):
                bad("base_url", "must be an http:// or https:// URL")

    # -- loading ---------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "config") -> "RunConfig":
        known = {f.name for f in fields(cls)}
        data = {k.replace("-", "_"): v for k, v in data.items()}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{source}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
        try:
            return cls(**data)
        except TypeError as exc:  # pragma: no cover - every field has a default
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def from_toml(cls, path: str | Path, **overrides) -> "RunConfig":
        """Settings from a TOML file (top level, or in tables named after the tree's sections:
        ``[budget]``, ``[adversary]``, ``[adversary.inner_search]``, ``[llm]``, ``[engine]``,
        ``[engine.sandbox]``), then
        ``overrides`` (not ``None``)."""
        data = cls.settings_in_toml(path)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(data, source=str(path))

    @staticmethod
    def settings_in_toml(path: str | Path) -> dict[str, Any]:
        """The settings a TOML file gives, flat (not checked yet)."""
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read config file {p}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {p}: {exc}") from None
        try:  # the tree's sections as tables ([run], [adversary], [adversary.inner_search], ...), or flat
            return flatten_tables(data, str(p))
        except SettingError as exc:
            raise ConfigError(f"config file {p}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def evaluation_executor(self) -> str | None:
        """Where the run's programs are evaluated: ``executor``, or ``process:workers``."""
        return self.executor if self.workers is None else f"process:{self.workers}"

    def sandbox_limits(self) -> dict[str, Any]:
        """The sandbox's limits this run sets apart from the engine's own (``SandboxLimits``):
        memory, file size and output per evaluation, and the compiled path; the time per instance
        goes with the evaluation (``timeout``)."""
        limits = {name: getattr(self, name) for name in SANDBOX_LIMITS if getattr(self, name) != default(name)}
        return {**limits, **({"jit": True, "jit_after": self.jit_after} if self.jit else {})}

    def idle_adversary(self) -> str | None:
        """Why this run's adversary can never run (``idle_adversary``), or ``None``."""
        return idle_adversary(self.budget, self.pop_size, self.tau, self.tau_unit) if self.robust else None

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

    def adversary_switches(self) -> dict[str, Any]:
        """The adversary's switches that differ from the search's defaults (the paper's)."""
        return {k: getattr(self, k) for k in ("projection", "encoding", "constraint", "length")
                if getattr(self, k) not in (None, fallback(k))}
