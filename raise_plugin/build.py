"""A run's parts, each built from its slice of the ``RunConfig`` (the evaluation, the LLM back-end,
the callbacks, the executor) and the wrapped method that holds them."""
from __future__ import annotations

from typing import Iterable

from .config import EngineSettings, RunConfig
from .engine import SandboxLimits, make_executor
from .engine.selfcheck import check_limits
from .instance_seeds import nominal_set
from .llm import asks_llm, is_offline, make_llm, say_notice
from .llm.run_usage import hold_caps
from .replay import ends_as_recorded
from .resolve import RunParts
from .robust import AdversarialInstanceCallback, Callback, robust
from .robust.budget import LLMBudget
from .robust.host_profiler import HostProfiler
from .robust.owned import CompiledPathReport, OwnedExecutor, OwnedLLM
from .rundir.writer import RunDirectory
from .validation import ValidationTrace

__all__ = ["build_run"]


def build_run(config: RunConfig, parts: RunParts, run_dir: RunDirectory, llm, callbacks: Iterable[Callback],
              initial_samples: int = 0):
    """The wrapped method of a resolved ``config``, recording to ``run_dir``: ``llm`` (``None``: the
    back-end of ``config.llm``) and ``callbacks`` after the run's own."""
    task = parts.task
    nominal = nominal_set(task, config.nominal_seed, config.adversary.nominal)
    # the aggregation A is the evaluation's, set here once for plain and robust runs alike; its limit is the
    # host's, on the whole nominal set (the task's own default is such a limit, shared among the instances),
    # so --timeout, seconds per instance as in every command, is that many for each nominal instance
    timeout = config.engine.sandbox.timeout
    evaluation = task.evaluation(instances=nominal, aggregation=config.adversary.aggregation,
                                 timeout_seconds=None if timeout is None else timeout * len(nominal))
    owned = []  # what the run makes itself, closed when it ends (or here, when it cannot be built)
    try:
        if llm is None:
            llm = make_llm(config.llm, seed=config.seed, task=config.task)
            ends_as_recorded(llm)
            owned.append(OwnedLLM(llm))
            hold_caps(llm, config.budget)
        if asks_llm(parts.method) and is_offline(llm):  # GP asks its back-end nothing
            say_notice()  # before the run: what stands in for an LLM, said once in a process
        executor = _executor(config.engine, run_dir, owned)
        own = _callbacks(config, parts)
        # before a sample: limits that fail the task's baseline (a spec, not yet made, is checked in a worker of
        # its own)
        check_limits(task, SandboxLimits.of(config.engine), executor, timeout=timeout)
        profiler = HostProfiler(str(run_dir.path / "host"), evaluation_name=task.name, method_name=config.method,
                                initial_num_samples=initial_samples) if config.engine.host_profiler else None
        method = robust(parts.method)(llm=llm, evaluation=evaluation, profiler=profiler,
                                      max_sample_nums=config.budget.samples, max_generations=None,
                                      pop_size=config.budget.pop_size, num_samplers=config.llm.num_samplers,
                                      num_evaluators=config.engine.num_evaluators,
                                      programs_in_flight=config.engine.programs_in_flight,
                                      callbacks=[*own, *callbacks, *owned], seed=config.seed,
                                      recorder=run_dir, executor=executor, generation_size=config.budget.pop_size,
                                      early_reject=config.engine.early_reject)
        if profiler is not None:  # its logs refused (a full or read-only disk) stop the run as its records do
            profiler.on_refused = method.fail
        return method
    except BaseException:
        for part in owned:
            part.close()
        raise


def _callbacks(config: RunConfig, parts: RunParts) -> list[Callback]:
    """The run's own callbacks: the adversary (a robust run), the LLM caps, the validation trace."""
    own: list[Callback] = []
    if config.robust:
        own.append(AdversarialInstanceCallback(parts.adversary, seed=config.adversary_seed))
    if config.budget.max_cost_usd is not None or config.budget.max_llm_calls is not None:
        own.append(LLMBudget.of(config.budget))
    if config.engine.validation_trace:
        own.append(ValidationTrace(every=parts.adversary.generations_per_refresh(config.budget.pop_size)))
    return own


def _executor(engine: EngineSettings, run_dir: RunDirectory, owned: list):
    """Where the run's programs are evaluated; workers the run starts itself (with limits or a compiled
    path of its own: properties of the workers) join ``owned``, to be stopped when it ends."""
    if not engine.sandbox_limits():
        return engine.evaluation_executor()  # made by the evaluator, with the engine's own limits
    executor = make_executor(engine)
    owned.append((CompiledPathReport if engine.jit else OwnedExecutor)(executor, run_dir.path))
    return executor
