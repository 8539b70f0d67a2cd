"""LLM back-ends, each a host ``llm4ad.base.LLM``: OpenAI-compatible, offline (no LLM), record/replay.

``make_llm(spec, **options)`` builds one from a short spec:

- ``"offline"`` or ``"offline:SEED"``: the LLM-free program sampler (options: ``seed``, ``task``);
- ``"openai"`` or ``"openai:MODEL"``: an OpenAI-compatible endpoint (options: ``base_url``,
  ``api_key``, ``timeout``, ``connect_timeout``, ``max_attempts``, ``backoff_base``,
  ``backoff_max``, ``max_tokens``, ``max_failed_requests``, ``prices``, ``request_options``,
  ``wait_notice``); configuration falls back to the environment;
- ``"replay:FILE"`` or ``"replay:RUN_DIR"``: answers from a recording, or from a run directory's
  journal of answered calls;
- ``"auto"`` (or ``None``): ``openai`` when an endpoint and a model are configured in the
  environment, else ``offline``.

``record=PATH`` wraps any of them to append every prompt/response pair to ``PATH``.

``make_llm(config.llm, seed=..., task=...)`` builds a run's back-end from its ``llm`` settings
(``LLMSettings``: the back-end, endpoint, prices, tokens, time per request and recording).
"""
from __future__ import annotations

import logging
import os
from typing import Any

from llm4ad.base import LLM

from tasks import Task

from ..config import LLMSettings
from ..durable import unwritable
from ..errors import BadArgument, BadArgumentType, UserError
from ..settings import SETTINGS, SettingError

from .errors import (EndpointFailed, LLMAborted, LLMCapReached, LLMConfigError, ReplayMissError, SamplerStallWarning,
                     UnknownBackendError)
from .offline import NO_LLM_NOTICE, OfflineSampler, nothing_to_vary, notice_said, say_notice
from .openai_backend import (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, OPENAI_API_URL, OpenAIBackend, endpoint_configured,
                             endpoint_url)
from .operators import OPERATOR_PHRASES, infer_operator
from .record import RecordingLLM, ReplayLLM, prompt_hash, records_its_source, unfit_recording
from .recording import Recording, read_recording
from .prices import DEFAULT_PRICES, Price
from .usage import UsageLedger

__all__ = [
    "make_llm", "check_llm", "OpenAIBackend", "OfflineSampler", "RecordingLLM", "ReplayLLM", "UsageLedger", "Price",
    "DEFAULT_PRICES", "OPERATOR_PHRASES", "infer_operator", "prompt_hash", "NO_LLM_NOTICE", "endpoint_url",
    "OPENAI_API_URL", "LLMConfigError", "LLMAborted", "LLMCapReached", "EndpointFailed", "ReplayMissError",
    "UnknownBackendError", "offline_stall", "SamplerStallWarning", "notice_said", "say_notice", "is_offline",
    "asks_llm", "check_backend",
]

SPECS = "'offline[:SEED]', 'openai[:MODEL]', 'replay:FILE', 'replay:RUN_DIR' or 'auto'"


def asks_llm(method) -> bool:
    """Whether ``method`` (a method's class, or a run of it) asks its back-end for programs; a method
    that writes its own (GP: ``asks_llm = False``) keeps the back-end only for the host's signature."""
    return bool(getattr(method, "asks_llm", True))


def is_offline(llm: LLM | str | None) -> bool:
    """Whether ``llm`` (a back-end or its spec) is the offline sampler: named, or ``auto`` with no
    endpoint configured."""
    backend = getattr(llm, "inner", llm)  # a recording's back-end
    if isinstance(backend, LLM):
        return isinstance(backend, OfflineSampler)
    kind = ("auto" if backend is None else str(backend).strip()).partition(":")[0].lower()
    return kind == "offline" or kind == "auto" and not endpoint_configured()


def offline_stall(task: Task, llm: LLM | str | None, budget: int, runs: int = 1, of: str = "") -> str | None:
    """Why ``runs`` runs of ``budget`` samples on ``task`` with ``llm`` (a back-end or its spec)
    would sample only copies of the task's template, with the fix; ``None`` when they would not
    (an LLM, a task with an offline library, a template the offline sampler can vary). ``of``
    names the runs' methods where a study's other runs ask no LLM (GP)."""
    why = nothing_to_vary(task) if runs and is_offline(llm) else None
    if why is None:
        return None
    runs_of = f" of {of}" if of else ""
    samples = f"all {budget} samples of " + (f"the run{runs_of}" if runs == 1 else f"each of the {runs} runs{runs_of}")
    return (f"{why}: {samples} will be copies of the template; add numeric constants to the template, give the "
            f"task an offline library (docs/tasks.md) or use an LLM (--llm openai)")


def make_llm(spec: "str | LLMSettings | None" = "auto", *, record: str | os.PathLike | None = None,
             **options: Any) -> LLM:
    """The back-end named by ``spec``; with ``record``, wrapped to record to that JSONL file. From a
    run's ``LLMSettings`` (``options``: the run's ``seed`` and ``task``, for the offline sampler and
    the endpoint's seed), each setting where the back-end takes it."""
    if isinstance(spec, LLMSettings):
        return _from_settings(spec, **options)
    if record is not None and not isinstance(record, (str, os.PathLike)):
        raise BadArgumentType(f"record: give the JSONL file to record to, got {type(record).__name__} {record!r:.40}")
    spec = "auto" if spec is None else str(spec).strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind == "auto" and not arg:
        kind = "openai" if endpoint_configured() else "offline"
        if kind == "offline" and (os.environ.get(ENV_API_KEY) or os.environ.get(ENV_BASE_URL)):
            logging.getLogger("raise_plugin.llm").warning(
                "an endpoint is configured but no model (set %s): using the offline sampler, not an LLM",
                " or ".join(ENV_MODEL))
    if kind == "offline":
        if arg:
            try:
                options["seed"] = int(arg)
            except ValueError:
                raise UnknownBackendError(f"offline seed must be an integer, got {arg!r} in {spec!r}") from None
        _only(options, {"seed", "task", "novelty_tries"}, kind)
        _check_seed(options.get("seed", 0))
        llm: LLM = OfflineSampler(**options)
    elif kind == "openai":
        if arg:
            options["model"] = arg
        _only(options, {"model", "base_url", "api_key", "timeout", "connect_timeout", "max_attempts", "backoff_base",
                        "backoff_max", "retry_after_max", "max_tokens", "max_failed_requests", "prices",
                        "request_options", "wait_notice", "sleep", "seed"}, kind)
        llm = OpenAIBackend(**options)
    elif kind == "replay":
        if not arg:
            raise UnknownBackendError("replay needs a recording: 'replay:FILE' or 'replay:RUN_DIR'")
        _only(options, set(), kind)
        llm = ReplayLLM(arg)
        why = records_its_source(llm.path, record)
        if why:
            raise UserError(f"record: {why}")
    else:
        raise UnknownBackendError(f"unknown LLM back-end {spec!r}; expected {SPECS}")
    return RecordingLLM(llm, record) if record else llm


def check_backend(llm) -> None:
    """``llm``, given to a run beside its config: a back-end object (an llm4ad ``LLM``: ``draw_sample``),
    or ``None`` for the back-end of the config's ``llm`` setting; else a one-line ``UserError``."""
    if llm is not None and not callable(getattr(llm, "draw_sample", None)):
        raise UserError(f"llm: give a back-end object (an llm4ad LLM), or leave it out for the config's llm setting "
                        f"(RunConfig(llm='offline'), 'openai:MODEL', ...), got {llm!r}")


def check_llm(settings: LLMSettings, out: str | os.PathLike | None = None) -> Recording | None:
    """What a run's ``llm`` section names, before anything is made: a replay's source holds a
    recording with an answer in it (``SettingError`` naming the field ``llm``), and a recording to
    write is a file that can be made and appended to (not a folder, nor under a file, nor a device
    or a pipe, nor the recording replayed, nor a run directory's journal of answers, ``out``'s own
    or another run's: ``record``). Returns a replay's recording (``read_recording``: a replay takes
    no more samples than the answers it holds); ``None`` for a back-end that is not a replay."""
    recording = None
    if settings.replayed is not None:
        try:
            recording = read_recording(settings.replayed)
        except UserError as exc:
            raise SettingError("llm", str(exc)) from None
        why = records_its_source(recording.path, settings.record)
        if why:
            raise SettingError("record", why)
    why = unwritable(settings.record) if settings.record else None
    if why is not None:
        raise SettingError("record", f"{settings.record}: {why}; give the JSONL file to record to")
    why = unfit_recording(settings.record, out) if settings.record else None
    if why is not None:
        raise SettingError("record", why)
    return recording


def _from_settings(settings: LLMSettings, *, seed: int, task: str) -> LLM:
    given = {"base_url": settings.base_url, "prices": settings.prices, "timeout": settings.llm_timeout}
    openai = {"seed": seed, "max_tokens": settings.max_tokens, **{k: v for k, v in given.items() if v}}
    options = {"offline": {"seed": seed, "task": task}, "openai": openai}.get(settings.kind, {})
    return make_llm(settings.backend, record=settings.record, **options)


def _check_seed(seed) -> None:
    """A one-line ``UserError`` unless ``seed`` is a seed (a whole number >= 0), as a run's is."""
    try:
        SETTINGS["seed"].check(seed)
    except SettingError as exc:
        raise BadArgument(str(exc)) from None


def _only(options: dict, allowed: set, kind: str) -> None:
    extra = sorted(set(options) - allowed)
    if extra:
        raise UnknownBackendError(f"options not understood by the {kind} back-end: {', '.join(extra)}")
