"""Compare's work as independent jobs: one per training run, one per suite evaluation.

A job is a small frozen record with an ``execute()`` method that returns its outcome as
data; ``raise_plugin.harness.job_queue`` runs them wherever ``raise_plugin.harness.job_place``
says. A training job writes its run directory straight into ``OUT/runs`` when the worker sees
the client's disk, or trains in a scratch folder and ships the run directory back
(``raise_plugin.harness.run_shipping``). A job that is interrupted leaves its run directory's
checkpoint behind, and the next attempt resumes from it.
"""
from __future__ import annotations

import functools
import json
import socket
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from raise_plugin import runner
from raise_plugin.config import RunConfig
from raise_plugin.engine import SandboxLimits
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.errors import PluginWarning
from raise_plugin.harness.provenance import record_code_version
from raise_plugin.harness.run_metric import best_line
from raise_plugin.harness.run_shipping import pack_run, scratch_folder, sees_client_disk
from raise_plugin.llm.run_usage import run_spent
from raise_plugin.llm import SamplerStallWarning
from raise_plugin.robust import IdleAdversaryWarning
from tasks import get_task
from tasks.common.suite import Dataset

__all__ = ["TrainJob", "EvalJob", "TrainOutcome", "EvalOutcome", "RunRepaired", "train_run", "run_finished",
           "suite_datasets", "ROW_FIELDS"]

ROW_FIELDS = ["method", "variant", "kind", "seed", "dataset", "family", "params", "instance", "metric", "valid",
              "reason"]


@dataclass
class TrainOutcome:
    name: str
    status: str                 # "trained", "resumed" or "finished before"
    seconds: float
    samples: int | None = None
    refreshes: int = 0
    best_score: float | None = None
    host: str = ""
    archive: bytes | None = None  # the run directory as a tar.gz, when the worker does not share the disk
    robust: bool = True         # RAISE (its best is scored on the grown set) or plain (on the nominal set)
    llm_spent: dict | None = None  # what the run sent to its endpoint in all (llm.run_usage.run_spent)
    recorded: dict | None = None  # the run's config.json: what its best is, in the task's metric (run_report.best_line)

    def summary(self) -> str:
        label = "best robust" if self.robust else "best"
        best = best_line(self.best_score, None, {"robust": self.robust, **(self.recorded or {})})
        refreshes = f"{self.refreshes} refresh{'es' if self.refreshes != 1 else ''}"
        return f"{self.status}, {self.samples} samples, {refreshes}, {label} {best}"


@dataclass
class EvalOutcome:
    name: str
    rows: list[dict]
    seconds: float
    host: str = ""

    def summary(self) -> str:
        invalid = sum(1 for r in self.rows if not r["valid"])
        return f"{len(self.rows)} instances" + (f", {invalid} invalid" if invalid else "")


class RunRepaired(PluginWarning):
    """A training run's directory repaired as its job resumed it (a line cut short by a kill, ...), named by
    the run: a compare resumes many."""


class RunStopped(RuntimeError):
    """A training run that could not go on (``summary.json``'s ``failure``): its job failed, and
    running the compare again resumes the run where it stopped; ``retry_helps`` is ``False`` where
    the resumed run would stop there again (a replay that its recording cannot answer)."""

    def __init__(self, message: str, retry_helps: bool = True):
        super().__init__(message)
        self.retry_helps = retry_helps


@dataclass(frozen=True)
class TrainJob:
    """Train (or resume) one run: ``run`` holds its ``RunConfig`` fields but ``out`` and ``executor``."""

    name: str                    # the run directory's name under OUT/runs
    label: str                   # what progress lines call it
    run: tuple                   # sorted (field, value) pairs of the RunConfig
    out: str                     # compare's output folder, absolute, as the client sees it
    token: str                   # the client's token (see ``client_token``)
    ship: bool | None = None     # ship the run directory back; None: when the worker does not see OUT
    evaluation: str | None = None  # executor spec the run evaluates programs with
    workers: int | None = None   # else: process:workers (None: the engine's default; a Dask worker's threads)
    caps: tuple = ()             # (field, value) pairs: the LLM caps this run is given of the study's

    kind = "train"

    def execute(self) -> TrainOutcome:
        ship = self.ship if self.ship is not None else not sees_client_disk(self.out, self.token)
        root = scratch_folder(self.token) if ship else Path(self.out) / "runs"
        outcome = train_run(root / self.name, dict(self.run), _evaluation_spec(self.evaluation, self.workers),
                            dict(self.caps))
        if ship:
            outcome.archive = pack_run(root / self.name)
        return outcome


@dataclass(frozen=True)
class EvalJob:
    """One heuristic on the task's test suite (at most ``suite_instances`` instances per dataset)."""

    name: str                    # results/<name>.csv on the client
    label: str
    task: str
    heuristic: Heuristic
    suite_instances: int | None
    fields: tuple                # (method, variant, kind, seed) of every row
    evaluation: str | None = None
    workers: int | None = None
    progress: bool | str = False
    timeout: float | None = None  # seconds per instance (None: the task's)
    limits: tuple = ()           # (field, value) pairs of the sandbox's limits (SandboxLimits), as the runs had

    kind = "evaluate"

    def execute(self) -> EvalOutcome:
        started = time.time()
        suite = suite_datasets(self.task, self.suite_instances)
        spec = _evaluation_spec(self.evaluation, self.workers)
        found = evaluate_suite(self.task, [self.heuristic], suite, executor=spec, progress=self.progress,
                               timeout=self.timeout, limits=SandboxLimits(**dict(self.limits)) if self.limits else None)
        method, variant, kind, seed = self.fields
        rows = [{"method": method, "variant": variant, "kind": kind, "seed": seed, "dataset": r.dataset,
                 "family": r.family, "params": r.params, "instance": r.instance, "metric": r.metric,
                 "valid": r.valid, "reason": r.reason} for r in found]
        return EvalOutcome(self.name, rows, time.time() - started, socket.gethostname())


@functools.lru_cache(maxsize=4)  # a job process evaluates many heuristics on one suite
def suite_datasets(task: str, per_dataset: int | None = None) -> list:
    """The task's test suite, at most ``per_dataset`` instances of each dataset (all by default)."""
    suite = get_task(task).test_suite()
    if per_dataset is not None:
        suite = [Dataset(d.family, d.params, d.instances[:per_dataset]) for d in suite]
    return suite


def _evaluation_spec(evaluation: str | None, workers: int | None) -> str | None:
    if evaluation is not None:
        return evaluation
    return None if workers is None else f"process:{workers}"


def run_finished(path: Path) -> bool:
    """Whether the run directory ``path`` holds a run that reached its end."""
    try:
        return bool(json.loads((Path(path) / "summary.json").read_text()).get("finished"))
    except (OSError, ValueError):
        return False


def train_run(path: Path, run: dict, evaluation: str | None, caps: dict | None = None) -> TrainOutcome:
    """The run in ``path``, trained from ``run`` (RunConfig fields), resumed from its checkpoint
    when it was interrupted, or left alone when it finished before; ``caps`` (``max_cost_usd``,
    ``max_llm_calls``) are what it may spend in all, its earlier requests included."""
    started = time.time()
    caps = caps or {}
    method, data = None, None  # the run; its summary as it ended, what summary.json holds (a full disk may refuse it)
    if run_finished(path):
        status = "finished before"
    elif (path / "config.json").exists():
        status = "resumed"
        record_code_version(path)
        # the recorded evaluation executor may name another machine's share of cores; results do not depend on it
        method = runner.resume_run(path, **({"executor": evaluation} if evaluation else {}), **caps,
                                   on_repair=lambda message: warnings.warn(f"{path.name}: {message}", RunRepaired,
                                                                           stacklevel=2))
        data = method.run()
    else:
        status = "trained"
        # before the config.json the run writes, which a re-run checks it against before reusing it: a compare killed
        # while the run was built (its engine starting) left a run of no version, set aside as another code's
        path.mkdir(parents=True, exist_ok=True)
        record_code_version(path)
        with warnings.catch_warnings():  # what the compare said once before it began, not again for each run
            warnings.simplefilter("ignore", IdleAdversaryWarning)
            warnings.simplefilter("ignore", SamplerStallWarning)
            method = runner.start_run(RunConfig(**{**run, **caps, "out": str(path), "executor": evaluation}))
        data = method.run()
    if method is not None and method.hook_interrupt:  # Ctrl-C as a hook ran: the run stopped, the compare stops too
        raise KeyboardInterrupt
    if data is None:
        data = json.loads((path / "summary.json").read_text()) if (path / "summary.json").exists() else {}
    if data.get("failure") and not data.get("finished"):  # its endpoint, engine or disk failed: it stopped
        # a replay its recording could not answer (a prompt it lacks, the recorded run's own failure) asks the same
        # prompts of the same answers when it resumes
        if str(run.get("llm", "")).startswith("replay:") and data["failure"].startswith("replay "):
            raise RunStopped(f"the run stopped: {data['failure']} (its replay would stop there again: a retry "
                             "cannot help)", retry_helps=False)
        raise RunStopped(f"the run stopped: {data['failure']} (run again, it resumes)")
    best = (data.get("best") or {}).get("robust_score")
    return TrainOutcome(path.name, status, time.time() - started, data.get("samples"), data.get("refreshes") or 0,
                        best, socket.gethostname(), robust=bool(run.get("robust", True)), llm_spent=run_spent(path),
                        recorded={k: run.get(k) for k in ("task", "aggregation")})
