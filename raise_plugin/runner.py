"""Building a recorded run from a ``RunConfig`` and starting it, or rebuilding one from its run
directory to resume it."""
from __future__ import annotations

import dataclasses
import time
import warnings
from pathlib import Path
from typing import Iterable

from tasks import get_task

from .config import ConfigError, IdleAdversaryWarning, RunConfig
from .engine import SandboxLimits, make_executor
from .engine.selfcheck import check_limits
from .errors import UserError
from .instance_seeds import nominal_set, resolve_instance_seed
from .llm import SamplerStallWarning, offline_stall, make_llm as make_backend
from .llm.endpoint import EndpointWarning, recorded_settings_of, resumed_endpoint, started_base_url
from .llm.usage import carry_usage, hold_caps
from .robust import AdversarialInstanceCallback, Callback, robust
from .robust.budget import LLMBudget
from .robust.host_profiler import HostProfiler
from .robust.llm_guard import REQUESTS_FILE
from .robust.owned_executor import CompiledPathReport, OwnedExecutor
from .resolve import RunParts, recorded_settings, resolve
from .rundir.files import write_json_atomic
from .rundir.lock import RunLock
from .rundir.reader import RunLog, check_holds_run
from .rundir.writer import RunDirectory
from .validation import ValidationTrace

__all__ = ["start_run", "resume_run", "default_out"]


def default_out(config: RunConfig) -> str:
    kind = "robust" if config.robust else "plain"
    name = get_task(config.task).name  # a task given by file or module: its name, not the reference
    return str(Path("runs") / f"{name}-{config.method}-{kind}-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}")


def make_llm(config: RunConfig):
    """The LLM back-end named by ``config.llm`` (``offline`` is seeded by the run's seed)."""
    kind = config.llm.split(":", 1)[0]
    given = {"base_url": config.base_url, "prices": config.prices, "timeout": config.llm_timeout}
    openai = {"seed": config.seed, "max_tokens": config.max_tokens, **{k: v for k, v in given.items() if v}}
    options = {"offline": {"seed": config.seed, "task": config.task}, "openai": openai}.get(kind, {})
    llm = make_backend(config.llm, record=config.record, **options)
    hold_caps(llm, config.max_llm_calls, config.max_cost_usd, config.max_failed_requests)
    return llm


def _build(config: RunConfig, parts: RunParts, run_dir: RunDirectory, llm, callbacks: Iterable[Callback],
           initial_samples: int = 0):
    task = parts.task
    nominal = nominal_set(task, config.nominal_seed, config.nominal)
    evaluation = task.evaluation(instances=nominal, aggregation=config.aggregation, timeout_seconds=config.timeout)
    llm = make_llm(config) if llm is None else llm
    all_callbacks: list[Callback] = []
    if config.robust:
        all_callbacks.append(AdversarialInstanceCallback.from_config(parts.adversary, seed=config.adversary_seed))
    if config.max_cost_usd is not None or config.max_llm_calls is not None:
        all_callbacks.append(LLMBudget(config.max_cost_usd, config.max_llm_calls))
    if config.validation_trace:
        every = config.tau if config.tau_unit == "generations" else max(1, config.tau // config.pop_size)
        all_callbacks.append(ValidationTrace(every=every))
    all_callbacks.extend(callbacks)
    executor = config.evaluation_executor()
    limits = config.sandbox_limits()
    if limits:  # the limits and the compiled path are properties of the workers: the run starts and owns them
        executor = make_executor(executor, SandboxLimits(**limits))
        all_callbacks.append((CompiledPathReport if config.jit else OwnedExecutor)(executor, run_dir.path))
    per_instance = None if config.timeout is None else config.timeout / max(1, len(nominal))
    # before a sample: limits that fail the task's baseline (a spec, not yet made, is checked in a worker of its own)
    check_limits(task, SandboxLimits(**(limits or {})), executor, timeout=per_instance)
    profiler = HostProfiler(str(run_dir.path / "host"), evaluation_name=task.name, method_name=config.method,
                            initial_num_samples=initial_samples) if config.host_profiler else None
    return robust(parts.method)(llm=llm, evaluation=evaluation, profiler=profiler, max_sample_nums=config.budget,
                                max_generations=None, pop_size=config.pop_size, num_samplers=config.num_samplers,
                                num_evaluators=config.num_evaluators, programs_in_flight=config.programs_in_flight,
                                callbacks=all_callbacks, seed=config.seed,
                                recorder=run_dir, executor=executor, generation_size=config.pop_size,
                                early_reject=config.early_reject)


def start_run(config: RunConfig, *, llm=None, callbacks: Iterable[Callback] = ()):
    """A new run writing to ``config.out`` (refused when that directory already holds one); ``.run()`` runs it and
    returns its summary (the dict ``summary()`` gives and ``summary.json`` holds). What the config names is
    checked first (``resolve``): a bad name, as a bad value, writes nothing."""
    config, parts = resolve(config)
    idle = config.idle_adversary()
    if idle and not config.allow_no_refresh:  # a robust run that would train as a plain one: refused, with the fix
        raise ConfigError(f"{idle} (or start it as it is with --allow-no-refresh)")
    out = Path(config.out or default_out(config))
    lock = RunLock(out).acquire()  # refused, naming the holder, when another process writes there
    try:
        if (out / "samples.jsonl").exists() or (out / "config.json").exists():
            raise UserError(f"{out} already holds a run; continue it with `raise-ahd resume {out}` or choose another --out")
        # recorded: the run directory, the endpoint resume will call and a seed no program can know
        config = dataclasses.replace(config, out=str(out), base_url=started_base_url(config.llm, config.base_url),
                                     instance_seed=resolve_instance_seed(config.instance_seed, config.task, config.seed))
        write_json_atomic(out / "config.json", recorded_settings_of(config.to_dict()))  # first: resume goes on from here
        run_dir = RunDirectory(out, lock=lock)
        method = _build(config, parts, run_dir, llm, callbacks)
    except BaseException:
        lock.release()
        raise
    if idle:  # allowed: said once the run is built (a run that cannot start says only why), before it samples
        warnings.warn(idle, IdleAdversaryWarning, stacklevel=2)
    stall = offline_stall(config.task, config.llm if llm is None else llm, config.budget)
    if stall:
        warnings.warn(stall, SamplerStallWarning, stacklevel=2)
    return method


def resume_run(path, *, llm=None, callbacks: Iterable[Callback] = (), budget: int | None = None, on_repair=None,
               **overrides):
    """The run recorded in ``path``, restored and ready to continue until its budget; ``.run()``
    continues it and returns its summary, as a new run's does.

    Refused when another process writes ``path``; damaged records are repaired or rebuilt first
    (``on_repair(message)`` hears of each), or refused in one line (``UserError``). ``budget`` and
    ``overrides`` (``max_cost_usd``, ``max_llm_calls``, ``max_tokens``, ``llm_timeout``,
    ``max_failed_requests``, ``base_url``; ``None`` leaves one as recorded) change the recorded config
    before the run continues. The LLM usage recorded so far is carried over (the run's request
    journal), so caps count the whole run. An ``openai`` run calls the base URL it recorded (else
    one ``EndpointWarning`` says which it calls, and why: ``llm.endpoint.resumed_endpoint``)."""
    check_holds_run(path)
    lock = RunLock(path).acquire()
    try:
        log = RunLog.load(path, on_repair=on_repair)
        data = recorded_settings(log.config)
        changes = {k: v for k, v in {"budget": budget, **overrides}.items() if v is not None}
        changes, endpoint_note = resumed_endpoint(data, changes)
        data.update(changes)
        config, parts = resolve(RunConfig.from_dict(data, source=str(Path(path) / "config.json")))
        run_dir = RunDirectory(path, lock=lock)
        if changes:
            run_dir.write_config(recorded_settings_of(config.to_dict()))
        journalled = (Path(path) / REQUESTS_FILE).exists()
        method = _build(config, parts, run_dir, llm, callbacks, initial_samples=len(log.samples))
        if not journalled:
            carry_usage(method.llm, Path(path) / "llm_usage.json")
        method.restore(log)
    except BaseException:
        lock.release()
        raise
    if endpoint_note:
        warnings.warn(endpoint_note, EndpointWarning, stacklevel=2)
    return method
