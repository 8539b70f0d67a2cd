"""The run directory: an append-only, crash-safe record of a run, and its reader for resume.

    RUN_DIR/
      config.json             the RunConfig (written once)
      samples.jsonl           one line per sample: program, score, per-instance metrics, instance-set version
      scores.jsonl            one line per program re-scored after the instance set changed
      population.jsonl        one line per generation: members and scores right after survival
      instances/index.jsonl   one line per instance (origin, distance, provenance) and per set version
      instances/<id>.npz      each instance's arrays
      checkpoint.json         generation, instance set, callback states, selection RNG (after each generation)
      summary.json            samples, generations, refreshes, best program, instance set, LLM usage
      llm_usage.json          the LLM back-end's ledger, when it keeps one
      host/                   the host's own EoHProfiler logs (CLI runs)

Every JSONL line is flushed and fsync'd before the run goes on; JSON files are replaced
atomically. A line cut short by a kill is ignored on reading and cut off before appending.
"""
from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RunDirectory", "RunLog", "save_instance", "load_instance"]


def _num(x):
    """A JSON-safe number: finite floats as they are, anything else (None, -inf, NaN) as null."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _num(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return repr(value)


def write_json_atomic(path: Path, data) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(_jsonable(data), fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def save_instance(path: Path, instance) -> None:
    """An instance (a dict of arrays and scalars) as ``.npz``, written atomically."""
    arrays = {}
    for key, value in (instance.items() if isinstance(instance, dict) else [("__value__", instance)]):
        arrays[str(key)] = np.asarray(value)
    tmp = path.with_name(path.name + ".tmp.npz")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_instance(path: Path):
    with np.load(path, allow_pickle=True) as data:
        out = {k: (data[k].item() if data[k].ndim == 0 else data[k]) for k in data.files}
    return out.get("__value__", out) if set(out) == {"__value__"} else out


def _repair_tail(path: Path) -> None:
    """Cut a last line left without its newline by a kill, so appends start on a fresh line."""
    if not path.exists():
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return out


class _Appender:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _repair_tail(path)
        self._fh = open(path, "a")
        self._lock = threading.Lock()

    def write(self, record: dict) -> None:
        line = json.dumps(_jsonable(record), allow_nan=False) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self):
        self._fh.close()


class RunDirectory:
    """The recorder a robust method writes to (pass it as ``recorder=``)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "instances").mkdir(exist_ok=True)
        self._samples = _Appender(self.path / "samples.jsonl")
        self._scores = _Appender(self.path / "scores.jsonl")
        self._population = _Appender(self.path / "population.jsonl")
        self._index = _Appender(self.path / "instances" / "index.jsonl")
        self._lock = threading.Lock()

    # -- start -----------------------------------------------------------------
    def write_config(self, config: dict) -> None:
        write_json_atomic(self.path / "config.json", config)

    def log_nominal(self, entries) -> None:
        """The nominal instances and set version 0 (skipped when already recorded)."""
        known = {r.get("instance_id") for r in read_jsonl(self.path / "instances" / "index.jsonl")}
        for entry in entries:
            if entry.instance_id not in known:
                self.log_instance(entry, {})
        if not any(r.get("kind") == "set" for r in read_jsonl(self.path / "instances" / "index.jsonl")):
            self.log_instance_set(0, entries, 0)

    # -- as the run goes -------------------------------------------------------
    def log_sample(self, view, rec, score, joined, duplicate, generation, sample_time, evaluate_time) -> None:
        self._samples.write({
            "sample": view.sample, "program_id": rec.program_id, "generation": generation,
            "instance_set": view.instance_set_version, "score": _num(score), "joined": joined,
            "duplicate": duplicate, "broken": rec.broken, "error": view.error,
            "metrics": {k: _num(v) for k, v in view.metrics.items()},
            "failed_on": [k for k, v in view.metrics.items() if v is None and k in rec.metrics],
            "algorithm": view.program.algorithm, "function": view.program.code, "program": rec.text,
            "sample_time": _num(sample_time), "evaluate_time": _num(evaluate_time),
        })

    def log_population(self, snapshot) -> None:
        self._population.write({
            "generation": snapshot.generation, "samples": snapshot.samples,
            "instance_set": snapshot.instance_set_version,
            "members": [{"program_id": p.program_id, "score": _num(p.score)} for p in snapshot.population],
        })

    def log_instance(self, entry, arrays: dict) -> None:
        file = f"{entry.instance_id}.npz"
        save_instance(self.path / "instances" / file, entry.instance)
        self._index.write({"kind": "instance", "instance_id": entry.instance_id, "origin": entry.origin,
                           "distance": _num(entry.distance), "generation": entry.generation, "file": file,
                           "provenance": entry.provenance, **{k: v for k, v in arrays.items()}})

    def log_instance_set(self, version: int, entries, refreshes: int) -> None:
        self._index.write({"kind": "set", "version": version, "refreshes": refreshes,
                           "members": [e.instance_id for e in entries]})

    def log_scores(self, version: int, rescored, ids) -> None:
        for view, metrics in rescored:
            self._scores.write({"program_id": view.program_id, "instance_set": version, "score": _num(view.score),
                                "metrics": {i: _num(metrics.get(i)) for i in ids if i in metrics},
                                "failed_on": [i for i in ids if i in metrics and metrics[i] is None]})

    def write_checkpoint(self, state: dict) -> None:
        with self._lock:
            write_json_atomic(self.path / "checkpoint.json", state)

    def write_summary(self, summary: dict) -> None:
        with self._lock:
            write_json_atomic(self.path / "summary.json", summary)
            if summary.get("llm_usage") is not None:
                write_json_atomic(self.path / "llm_usage.json", summary["llm_usage"])

    def close(self) -> None:
        for a in (self._samples, self._scores, self._population, self._index):
            a.close()


@dataclass
class RunLog:
    """Everything a run directory holds, read back (lines cut short by a kill are skipped)."""

    path: Path
    config: dict
    samples: list[dict]
    scores: list[dict]
    populations: list[dict]
    instances: dict[str, dict]
    sets: list[dict]
    checkpoint: dict | None
    summary: dict | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "RunLog":
        p = Path(path)
        if not (p / "config.json").exists():
            raise FileNotFoundError(f"{p} is not a run directory (no config.json)")
        index = read_jsonl(p / "instances" / "index.jsonl")
        instances: dict[str, dict] = {}
        for r in index:
            if r.get("kind") == "instance":
                instances[r["instance_id"]] = r
        samples = read_jsonl(p / "samples.jsonl")
        # a duplicate sample number can only come from a line rewritten after a crash: keep the first
        seen, unique = set(), []
        for s in samples:
            if s["sample"] not in seen:
                seen.add(s["sample"])
                unique.append(s)
        return cls(
            path=p,
            config=json.loads((p / "config.json").read_text()),
            samples=unique,
            scores=read_jsonl(p / "scores.jsonl"),
            populations=read_jsonl(p / "population.jsonl"),
            instances=instances,
            sets=[r for r in index if r.get("kind") == "set"],
            checkpoint=_read_json(p / "checkpoint.json"),
            summary=_read_json(p / "summary.json"),
        )

    def instance(self, instance_id: str) -> Any:
        if instance_id not in self._cache:
            self._cache[instance_id] = load_instance(self.path / "instances" / self.instances[instance_id]["file"])
        return self._cache[instance_id]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
