"""Building a recorded run from a ``RunConfig`` and starting it, or rebuilding one from its run
directory to resume it."""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Iterable

from .build import build_run
from .config import ConfigError, RunConfig, bad_field, check_names, check_setting
from .durable import unwritable
from .errors import UserError
from .llm import SamplerStallWarning, asks_llm, check_backend, offline_stall
from .llm.endpoint import EndpointWarning, recorded_settings_of, resumed_endpoint
from .llm.run_usage import carry_usage, check_caps_left
from .llm.usage import REQUESTS_FILE
from .robust import Callback, IdleAdversaryWarning
from .robust.llm_guard import check_journals
from .resolve import default_out, recorded_settings, resolve, started
from .rundir.files import write_json_atomic
from .rundir.lock import RunLock
from .rundir.reader import RunLog, check_holds_run, holds, load_config
from .rundir.writer import RunDirectory

__all__ = ["start_run", "resume_run", "default_out", "ENDPOINT_CHANGES", "RESUME_CHANGES"]

# what a resumed run may change: its caps and endpoint (resume's flags), and where its programs run (its
# results do not depend on it); any other setting would leave its records describing another run
ENDPOINT_CHANGES = ("max_cost_usd", "max_llm_calls", "max_tokens", "llm_timeout", "max_failed_requests", "base_url")
RESUME_CHANGES = ENDPOINT_CHANGES + ("executor", "workers")


def start_run(config: RunConfig, *, llm=None, callbacks: Iterable[Callback] = ()):
    """A new run writing to ``config.out`` (refused when that directory already holds one); ``.run()`` runs it and
    returns its summary (the dict ``summary()`` gives and ``summary.json`` holds). What the config names is
    checked first (``resolve``): a bad name, as a bad value, writes nothing."""
    if not isinstance(config, RunConfig):
        raise UserError(f"start_run takes a RunConfig (rp.RunConfig(task=..., budget=...)), got "
                        f"{type(config).__name__}")
    check_backend(llm)
    config, parts = resolve(config)
    if parts.idle and not config.adversary.allow_no_refresh:  # a robust run that would train as a plain one:
        raise ConfigError(f"{parts.idle} (or start it as it is with --allow-no-refresh)")  # refused, with the fix
    config = started(config, parts.task)
    out = Path(config.out)
    why = unwritable(out, folder=True)
    if why:  # a file there, or a place that holds none: refused before the lock makes the folder
        bad_field("out", str(out), why)
    before = set(os.listdir(out)) if out.is_dir() else None  # a run refused as it is built leaves nothing new
    lock = RunLock(out).acquire()  # refused, naming the holder, when another process writes there
    run_dir = None
    try:
        held = holds(out)
        if held == "a run":
            raise UserError(f"{out} already holds a run; continue it with `raise-ahd resume {out}` or "
                            "choose another --out")
        if held:  # a compare's report.html and the rest would be a run's
            raise UserError(f"{out} holds {held}; a run writes a folder of its own: choose another --out")
        write_json_atomic(out / "config.json", recorded_settings_of(config.to_dict()))  # first: resume goes on from here
        run_dir = RunDirectory(out, lock=lock)
        method = build_run(config, parts, run_dir, llm, callbacks)
    except BaseException:
        if run_dir is not None:
            run_dir.close()  # its logs (and the lock)
        lock.release(refused=True)
        _remove_new(out, before)
        raise
    if parts.idle:  # allowed: said once the run is built (a run that cannot start says only why), before it samples
        warnings.warn(parts.idle, IdleAdversaryWarning, stacklevel=2)
    backend = config.llm.backend if llm is None else llm  # GP asks its back-end nothing
    stall = offline_stall(parts.task, backend, config.budget.samples) if asks_llm(parts.method) else None
    if stall:
        warnings.warn(stall, SamplerStallWarning, stacklevel=2)
    return method


def _remove_new(out: Path, before: set | None) -> None:
    """What a new run refused as it was built (a back-end without its key, a method that cannot take the
    task) wrote in ``out``: the folder if it made it, else the entries it added."""
    if before is None:
        shutil.rmtree(out, ignore_errors=True)
        return
    for name in set(os.listdir(out)) - before if out.is_dir() else ():
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def resume_run(path, *, llm=None, callbacks: Iterable[Callback] = (), budget: int | None = None, on_repair=None,
               **overrides):
    """The run recorded in ``path``, restored and ready to continue until its budget; ``.run()``
    continues it and returns its summary, as a new run's does.

    Refused when another process writes ``path``; damaged records are repaired or rebuilt first
    (``on_repair(message)`` hears of each), or refused in one line (``UserError``). ``budget`` and ``overrides``
    (``RESUME_CHANGES``: the caps, ``llm_timeout``, ``base_url``, ``executor``, ``workers``; ``None`` leaves one as
    recorded) change the recorded config before the run continues (a budget below the samples it has taken, or any
    other setting, is a ``ConfigError``, and nothing changes; a refused resume leaves the lock naming the run's last
    writer). The LLM usage recorded so far is carried over (the run's request journal), so caps count the whole run.
    An ``openai`` run calls the base URL it recorded (else an ``EndpointWarning`` says which, and why)."""
    check_backend(llm)
    check_names(overrides, "resume_run")
    fixed = sorted(name for name, value in overrides.items() if value is not None and name not in RESUME_CHANGES)
    if fixed:
        raise ConfigError(f"resume_run: {fixed[0]!r} stays as the run recorded it (its records would describe "
                          f"another run); a resume changes budget, {', '.join(RESUME_CHANGES)}: start a new run, "
                          f"or replay this one with other settings (replaying)", fixed[0])
    if budget is not None:
        check_setting("budget", budget)
    check_holds_run(path)
    lock = RunLock(path).acquire()
    run_dir = None
    try:
        load_config(path, whole=True)  # one lacking a setting is refused before any record is repaired
        log = RunLog.load(path, on_repair=on_repair)
        check_journals(Path(path), bool(log.samples), log.repaired)  # before the LLM guard reads them
        if budget is not None and budget < len(log.samples):  # a run cannot take back what it sampled
            bad_field("budget", budget, f"must be at least the {len(log.samples)} samples the run has taken "
                                        "(resume raises a run's budget; without one it continues as recorded)")
        data = recorded_settings(log.config)
        changes = {k: v for k, v in {"budget": budget, **overrides}.items() if v is not None}
        changes, endpoint_note = resumed_endpoint(data, changes)
        check_caps_left(path, changes)  # a cap at what was sent already: refused, as a budget below the samples
        data.update(changes)
        config, parts = resolve(RunConfig.from_dict(data, source=str(Path(path) / "config.json")))
        run_dir = RunDirectory(path, lock=lock)
        if changes:
            run_dir.write_config(recorded_settings_of(config.to_dict()))
        journalled = (Path(path) / REQUESTS_FILE).exists()
        method = build_run(config, parts, run_dir, llm, callbacks, initial_samples=len(log.samples))
        if not journalled:
            carry_usage(method.llm, Path(path) / "llm_usage.json")
        method.restore(log)
    except BaseException:
        if run_dir is not None:
            run_dir.close()  # its logs (and the lock)
        lock.release(refused=True)  # refused before it wrote: the lock names the run's last writer again
        raise
    if endpoint_note:
        warnings.warn(endpoint_note, EndpointWarning, stacklevel=2)
    return method
