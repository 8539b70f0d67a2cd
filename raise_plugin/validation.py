"""Robustness during a run: the current best program's metric on the task's validation suite.

``ValidationTrace`` is a callback: every ``every`` generations (after the adversarial
callback's refresh, when it runs first) and at the end of the run it evaluates the
current best program on the validation suite (a few instances per validation family,
never the test suite), caches the result per program, and appends a point to
``validation.jsonl`` in the run directory. ``trace_run_directory`` computes the same
points after the fact from a run directory's population records, for runs made without
the callback. A rising validation metric while the robust and nominal scores improve is
the sign of a run that has started to overfit.

``select_final`` is the final selection on the validation suite: among a finished run's
last population (and its robust best), the program with the best validation metric,
recorded in ``selection.json`` (``raise-ahd select``, ``compare --select-on validation``).
"""
from __future__ import annotations

import json
import math
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable

import numpy as np

from tasks.common.classical import best_on_validation

from .durable import AppendLog
from .errors import PluginWarning
from .engine.suite import Heuristic, evaluate_suite
from .robust.hooks import Callback, RunSnapshot
from .rundir.files import read_json, read_jsonl, write_json_atomic
from .rundir.reader import load_summary, rescored
from .rundir.repair import keep_damaged, valid_population
from .selection import selects_on
from .settings import default

__all__ = ["ValidationTrace", "validation_metrics", "run_workers", "trace_run_directory", "read_trace",
           "final_candidates", "recorded_selection", "select_final", "TRACE_FILE", "SELECTION_FILE", "reference_rules",
           "reference_words"]

TRACE_FILE = "validation.jsonl"
SELECTION_FILE = "selection.json"


def validation_metrics(task, codes: dict[str, str], *, per_dataset: int = default("per_dataset"), baselines: Iterable[str] = (),
                       timeout: float | None = None, workers: int | None = None, executor=None) -> dict[str, dict]:
    """Mean validation metric (and per family) of each program text in ``codes`` and of the named baselines,
    evaluated on ``executor`` (a run's: ``engine_executor``) or, without one, a pool of ``workers``
    sandboxed workers made for it (one per core when ``None``).

    Returns ``name -> {"metric": mean over valid instances or inf, "families": {family: mean},
    "failures": count}``. A program that fails on an instance counts as failed there (its
    mean is taken over the rest; ``metric`` is ``inf`` when it fails everywhere).
    """
    datasets = task.validation_suite(per_dataset=per_dataset)
    heuristics = [Heuristic(name, code=code) for name, code in codes.items()]
    heuristics += [Heuristic(name, baseline=name) for name in baselines]
    if not heuristics:
        return {}
    rows = evaluate_suite(task.name, heuristics, datasets, workers=workers, timeout=timeout, progress=False,
                          executor=executor)
    out: dict[str, dict] = {}
    for h in heuristics:
        mine = [r for r in rows if r.heuristic == h.name]
        valid = [r for r in mine if r.valid and math.isfinite(r.metric)]
        families = {}
        for family in dict.fromkeys(r.family for r in mine):
            values = [r.metric for r in valid if r.family == family]
            families[family] = float(np.mean(values)) if values else math.inf
        out[h.name] = {"metric": float(np.mean([r.metric for r in valid])) if valid else math.inf,
                       "families": families, "failures": len(mine) - len(valid)}
    return out


_BASELINES: dict[tuple, dict[str, float]] = {}  # (task, per_dataset, timeout, baselines) -> name -> metric
_BASELINES_LOCK = threading.Lock()


def reference_rules(task) -> list[str]:
    """The classical rule a program is measured against on the validation suite: the best there
    (``best_on_validation``, from every rule of the task), the one a compare's tables test against."""
    chosen = best_on_validation(task)
    return [] if chosen is None else [chosen]


def reference_words(task, name: str) -> str:
    """What the rule ``name`` a trace carries (``best_baseline``) is: the best classical rule on the
    validation suite, as a trace records it now, or, in a trace recorded before, the best of the
    task's baselines on the instances it traced."""
    return ("best classical rule on the validation suite" if name in reference_rules(task)
            else "best of the task's baselines on the instances traced")


def baseline_validation(task, per_dataset: int, timeout: float | None, workers: int | None = None,
                        executor=None) -> dict[str, float]:
    """The mean validation metric of ``task``'s reference rule (``reference_rules``) on the instances
    a trace evaluates, computed once per process for a task, suite size and time limit (the runs of
    a compare in one process share it)."""
    rules = reference_rules(task)
    key = (task.name, int(per_dataset), timeout, tuple(rules))
    with _BASELINES_LOCK:
        if key not in _BASELINES:
            scores = validation_metrics(task, {}, per_dataset=per_dataset, baselines=rules, timeout=timeout,
                                        workers=workers, executor=executor)
            _BASELINES[key] = {name: s["metric"] for name, s in scores.items()}
        return _BASELINES[key]


def run_workers(method):
    """The run's own sandboxed workers (``engine_executor``), where the validation trace's jobs queue
    between the run's; ``None`` where the run evaluates in its own thread (``safe_evaluate=False``) or
    on the compiled path, whose tally (``compiled.json``) counts the run's own programs and jobs alone."""
    executor = method.engine_executor
    if executor is None or getattr(getattr(executor, "limits", None), "jit", False):
        return None
    return executor


def check_trace_settings(every, per_dataset) -> None:
    """A ``ValueError`` naming ``every`` or ``per_dataset`` when it is not a whole number >= 1."""
    for name, value in (("every", every), ("per_dataset", per_dataset)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


class ValidationTrace(Callback):
    """Every ``every`` generations and at the end, the best program's metric on the validation suite.

    Args:
        every: generations between two points (the paper's tau, 5, by default).
        per_dataset: validation instances per (family, size) dataset (1: ten instances).
        timeout: seconds per instance (the task's limit when ``None``).
        workers: engine worker processes of the trace's own pool, made for each point where the
            run has no workers it can share (``run_workers``); one per core when ``None``.
    """

    def __init__(self, every: int = 5, per_dataset: int = default("per_dataset"), *, timeout: float | None = None,
                 workers: int | None = None):
        check_trace_settings(every, per_dataset)
        self.every = every
        self.per_dataset = per_dataset
        self.timeout = timeout
        self.workers = workers
        self.reset()

    def reset(self) -> None:
        """No point yet (a new run's task may be another: its baselines and programs are measured afresh)."""
        self.points: list[dict] = []
        self.baselines: dict[str, float] = {}
        self._cache: dict[str, dict] = {}
        self._last_generation = -1

    @property
    def state_key(self) -> str:
        return f"ValidationTrace(every={self.every},per_dataset={self.per_dataset})"

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        if not self.baselines and method.task is not None:
            self.baselines = dict(baseline_validation(method.task, self.per_dataset, self._timeout(method),
                                                      self.workers, run_workers(method)))
        # resumed: a generation whose point a kill left past the checkpoint ends again without a second point
        directory = getattr(getattr(method, "recorder", None), "path", None)
        recorded = read_trace(directory) if directory is not None else []
        self._last_generation = max([self._last_generation, *(p.get("generation", -1) for p in recorded)])

    def on_generation_end(self, method, snapshot: RunSnapshot) -> None:
        if snapshot.generation % self.every == 0:
            self.measure(method)

    def on_run_end(self, method, snapshot: RunSnapshot) -> None:
        self.measure(method)

    def measure(self, method) -> dict | None:
        """One point on the current best program (skipped when this generation has one)."""
        snap = method.snapshot()
        best = snap.best
        if best is None or method.task is None or snap.generation == self._last_generation:
            return None
        started = time.perf_counter()
        if best.program_id not in self._cache:
            scores = validation_metrics(method.task, {best.program_id: method.program_text(best.program_id)},
                                        per_dataset=self.per_dataset, timeout=self._timeout(method),
                                        workers=self.workers, executor=run_workers(method))
            self._cache[best.program_id] = scores[best.program_id]
        score = self._cache[best.program_id]
        nominal_ids = [v.instance_id for v in snap.instance_set if v.origin == "nominal"]
        metrics = method.program_metrics(best.program_id)
        nominal = [metrics.get(i) for i in nominal_ids]
        point = {
            "generation": snap.generation, "samples": snap.samples, "refreshes": snap.refreshes,
            "program_id": best.program_id, "robust_score": best.score,
            "nominal_metric": float(np.mean(nominal)) if nominal and None not in nominal else None,
            "validation_metric": score["metric"], "validation_families": score["families"],
            "validation_failures": score["failures"], "best_baseline": _best(self.baselines),
            "seconds": time.perf_counter() - started,
        }
        self.points.append(point)
        self._last_generation = snap.generation
        directory = getattr(getattr(method, "recorder", None), "path", None)
        if directory is not None:
            trace = AppendLog(Path(directory) / TRACE_FILE)
            try:
                trace.append(json.dumps(_finite(point)))
            finally:
                trace.close()
        return point

    def state_dict(self) -> dict:
        return {"points": len(self.points), "last_generation": self._last_generation,
                "baselines": dict(self.baselines)}

    def load_state_dict(self, state: dict) -> None:
        self._last_generation = int(state.get("last_generation", -1))
        self.baselines = dict(state.get("baselines") or {})

    @staticmethod
    def _timeout(method) -> float | None:
        return getattr(getattr(method, "evaluation", None), "timeout_seconds", None)


def _best(baselines: dict[str, float]) -> dict | None:
    if not baselines:
        return None
    name = min(baselines, key=baselines.get)
    return {"name": name, "metric": baselines[name]}


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def read_trace(run_dir) -> list[dict]:
    """The points of a run directory's ``validation.jsonl`` (empty when it has none)."""
    return read_jsonl(Path(run_dir) / TRACE_FILE)


def trace_run_directory(run_dir, task, *, every: int = 5, per_dataset: int = default("per_dataset"), workers: int | None = None,
                        timeout: float | None = None) -> list[dict]:
    """A finished run's validation trace from its records (every ``every`` generations and the last): each point
    that generation's best member by robust score after its refresh (``rescored``), as a run's own trace."""
    check_trace_settings(every, per_dataset)
    path = Path(run_dir)
    populations = [g for g in read_jsonl(path / "population.jsonl") if isinstance(g, dict) and valid_population(g)]
    programs = {s["program_id"]: s["program"] for s in read_jsonl(path / "samples.jsonl")}
    records = read_jsonl(path / "scores.jsonl")
    chosen = []
    for k, pop in enumerate(populations):
        if pop["generation"] % every and k != len(populations) - 1:
            continue
        until = populations[k + 1].get("instance_set", 0) if k + 1 < len(populations) else math.inf
        scores = rescored({m["program_id"]: m["score"] for m in pop["members"] if m["program_id"] in programs
                           and m.get("score") is not None and math.isfinite(m["score"])},
                          records, pop.get("instance_set", 0), until)
        if scores:
            best = max(scores, key=scores.get)
            chosen.append((pop, {"program_id": best, "score": scores[best]}))
    codes = {best["program_id"]: programs[best["program_id"]] for _, best in chosen}
    rules = reference_rules(task)
    scores = validation_metrics(task, codes, per_dataset=per_dataset, baselines=rules, workers=workers, timeout=timeout)
    baselines = {name: scores[name]["metric"] for name in rules}
    return [{"generation": pop["generation"], "samples": pop["samples"], "program_id": best["program_id"],
             "robust_score": best["score"], "validation_metric": scores[best["program_id"]]["metric"],
             "validation_families": scores[best["program_id"]]["families"],
             "best_baseline": _best(baselines)} for pop, best in chosen]


def final_candidates(run_dir, summary: dict | None = None) -> dict | None:
    """What a finished run can hand on: its robust best and the valid members of its last
    population. ``best`` (the robust best's id), ``codes`` (id -> program text), ``robust_scores``
    (id -> robust score on the run's final instance set: a refresh in the last generation
    re-scores the members after their population is recorded, so ``scores.jsonl`` has the
    last word), ``summary`` (its ``summary.json``, read here unless given) and ``unread``: why the
    last population cannot be read whole (``None`` when it can; else one warning line says the
    choice is among fewer candidates). ``None`` when the run has no valid program."""
    path = Path(run_dir)
    summary = (load_summary(path) or {}) if summary is None else summary
    best = summary.get("best") or {}
    if not best.get("program"):
        return None
    programs = {s["program_id"]: s["program"] for s in read_jsonl(path / "samples.jsonl")}
    populations = [g for g in read_jsonl(path / "population.jsonl") if isinstance(g, dict) and valid_population(g)]
    members = [m for m in (populations[-1]["members"] if populations else [])
               if m.get("score") is not None and math.isfinite(m["score"]) and m["program_id"] in programs]
    unread = _unread_population(path, summary, populations, programs)
    version = populations[-1].get("instance_set", 0) if populations else 0
    robust = rescored({m["program_id"]: float(m["score"]) for m in members}, read_jsonl(path / "scores.jsonl"), version)
    robust.setdefault(best["program_id"], float(best.get("robust_score", math.inf)))
    codes = {pid: best["program"] if pid == best["program_id"] else programs[pid] for pid in robust}
    if unread:
        warnings.warn(f"{path}: the run's last population cannot be read ({unread}); chosen among the {len(robust)} "
                      "candidate(s) read, not the whole population (restore the run's records from a copy to choose "
                      "among them all)", PluginWarning, stacklevel=3)
    return {"best": best["program_id"], "codes": codes, "robust_scores": robust, "summary": summary,
            "unread": unread}


def _unread_population(path: Path, summary: dict, populations: list[dict], programs: dict) -> str | None:
    """Why the run's last population cannot be read whole from ``population.jsonl`` (``None``: it can):
    the file is missing, holds no generation record or ends before the run's last generation
    (``summary.json``'s ``generations``), or its members name programs ``samples.jsonl`` does not hold."""
    generations = summary.get("generations")
    generations = generations if isinstance(generations, int) and not isinstance(generations, bool) else None
    if not (path / "population.jsonl").exists():
        return "population.jsonl is missing"
    if not populations:
        return None if generations == 0 else "population.jsonl holds no readable generation record"
    last = populations[-1]
    if generations is not None and last["generation"] < generations:
        return f"population.jsonl's last readable record is generation {last['generation']} of {generations}"
    lost = sum(m["program_id"] not in programs for m in last["members"])
    if lost:
        return f"{lost} of its {len(last['members'])} members name programs samples.jsonl does not hold"
    return None


def recorded_selection(path: Path) -> dict | None:
    """The selection recorded in ``path`` (``select_final``'s ``selection.json``); ``None`` when there
    is none, or when it is damaged (not JSON, not an object, or without a field the choice is shown
    by): then one warning line says so, the file is kept as ``selection.json.damaged``, and the
    program is chosen again."""
    if not path.exists():
        return None
    selection = read_json(path)
    if not isinstance(selection, dict):
        why = "not a JSON object" if selection is not None else "not valid JSON"
    else:
        wrong = [k for k in ("program_id", "program", "robust_best") if not isinstance(selection.get(k), str)]
        candidates = selection.get("candidates")
        if not isinstance(candidates, list) or not all(
                isinstance(c, dict) and isinstance(c.get("program_id"), str)
                and all(k in c and (c[k] is None or _is_number(c[k])) for k in ("robust_score", "validation_metric"))
                for c in candidates):
            wrong.append("candidates")
        if not wrong:
            return selection
        why = f"its {', '.join(wrong)} missing or malformed"
    keep_damaged(path)
    warnings.warn(f"{path} is damaged ({why}); the program is chosen again and the file replaced (the original is "
                  f"kept as {path.name}.damaged)", PluginWarning, stacklevel=3)
    return None


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


@selects_on("validation")
def select_final(run_dir, task, *, per_dataset: int = default("per_dataset"), workers: int | None = None,
                 timeout: float | None = None) -> dict | None:
    """The final selection of a finished run on the validation suite (never the test suite).

    The candidates are the members of the run's last population and its robust best; each
    is evaluated on the validation suite (``per_dataset`` instances per dataset) and the one
    with the lowest mean metric is chosen (ties: the higher robust score, then the robust
    best). Returns and writes to ``RUN_DIR/selection.json``: ``program_id``, ``program``,
    ``validation_metric``, ``robust_best`` (its id) and, per candidate, its robust score (on the
    run's final instance set) and validation metric, and ``unread`` where the last population
    could not be read whole (``final_candidates``). A selection already recorded with the
    same ``per_dataset`` at the same number of samples, from the whole population, is returned
    as is (a resumed run is chosen again; a damaged record is replaced: ``recorded_selection``).
    ``None`` when the run has no valid program.
    """
    path = Path(run_dir)
    recorded = path / SELECTION_FILE
    summary = load_summary(path) or {}
    samples = summary.get("samples")
    previous = recorded_selection(recorded)
    if (previous is not None and previous.get("per_dataset") == per_dataset and previous.get("samples") == samples
            and not previous.get("unread")):  # one made without the whole population is made again
        return previous
    final = final_candidates(path, summary)
    if final is None:
        return None
    best, codes, robust = final["best"], final["codes"], final["robust_scores"]
    scores = validation_metrics(task, codes, per_dataset=per_dataset, workers=workers, timeout=timeout)
    order = sorted(robust, key=lambda pid: (scores[pid]["metric"], -robust[pid], pid != best))
    chosen = order[0]
    selection = {
        "select_on": "validation", "per_dataset": per_dataset, "samples": samples, "program_id": chosen,
        "program": codes[chosen],
        "validation_metric": _finite(scores[chosen]["metric"]), "robust_best": best,
        "candidates": [{"program_id": pid, "robust_score": _finite(robust[pid]),
                        "validation_metric": _finite(scores[pid]["metric"])} for pid in order],
        **({"unread": final["unread"]} if final["unread"] else {}),
    }
    write_json_atomic(recorded, selection)
    return selection
