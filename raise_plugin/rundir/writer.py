"""The recorder a run writes to: samples, re-scores, populations, instances, checkpoint and summary."""
from __future__ import annotations

import os
import threading
from collections import Counter
from pathlib import Path

from .files import JsonlAppender, json_number, read_jsonl, save_instance, write_json_atomic
from .lock import RunLock

__all__ = ["RunDirectory"]


class RunDirectory:
    """The recorder a robust method writes to (pass it as ``recorder=``).

    Holds the directory's ``RunLock`` (taken here unless an acquired one is passed) until
    ``close()`` or the end of the process.
    """

    def __init__(self, path: str | os.PathLike, lock: RunLock | None = None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock = lock if lock is not None and lock.held else RunLock(self.path).acquire()
        (self.path / "instances").mkdir(exist_ok=True)
        self._samples = JsonlAppender(self.path / "samples.jsonl")
        self._scores = JsonlAppender(self.path / "scores.jsonl")
        self._population = JsonlAppender(self.path / "population.jsonl")
        self._index = JsonlAppender(self.path / "instances" / "index.jsonl")
        self._lock = threading.Lock()
        # what a resumed run recorded already: a refresh made again after a kill is not written twice
        index = read_jsonl(self.path / "instances" / "index.jsonl")
        self._known_instances = {r.get("instance_id") for r in index if r.get("kind") == "instance"}
        self._known_sets = {r.get("version") for r in index if r.get("kind") == "set"}
        # and its re-scores, by program and set: a refresh made again writes only what the kill left unwritten
        self._known_scores = Counter((r.get("program_id"), r.get("instance_set"))
                                     for r in read_jsonl(self.path / "scores.jsonl"))
        # a generation recorded with no member (a start with no valid program) is recorded again
        populations = [p for p in read_jsonl(self.path / "population.jsonl") if p.get("members")]
        self.recorded_generation = int(populations[-1].get("generation", -1)) if populations else -1

    # -- start -----------------------------------------------------------------
    def write_config(self, config: dict) -> None:
        write_json_atomic(self.path / "config.json", config)

    def log_nominal(self, entries) -> None:
        """The nominal instances and set version 0 (skipped when already recorded)."""
        for entry in entries:
            self.log_instance(entry, {})
        if not self._known_sets:
            self.log_instance_set(0, entries, 0)

    # -- as the run goes -------------------------------------------------------
    def log_sample(self, view) -> None:
        d = view.details
        self._samples.write({
            "sample": view.sample, "program_id": d["program_id"], "generation": d["generation"],
            "instance_set": view.instance_set_version, "score": json_number(d["score"]), "joined": d["joined"],
            "duplicate": d["duplicate"], "broken": d["broken"], "error": view.error,
            "metrics": {k: json_number(v) for k, v in view.metrics.items()},
            "failed_on": list(d["failed_on"]),
            "algorithm": view.program.algorithm, "function": view.program.code, "program": d["program"],
            "sample_time": json_number(d.get("sample_time")), "evaluate_time": json_number(d.get("evaluate_time")),
            **({"cursor": d["cursor"]} if d.get("cursor") else {}),
            **({"work": d["work"]} if d.get("work") else {}),
            **({"rejected": True, "admission_bound": json_number(d["admission_bound"])} if d.get("rejected") else {}),
        })

    def log_population(self, snapshot) -> None:
        self.recorded_generation = max(self.recorded_generation, int(snapshot.generation))
        self._population.write({
            "generation": snapshot.generation, "samples": snapshot.samples,
            "instance_set": snapshot.instance_set_version,
            "members": [{"program_id": p.program_id, "score": json_number(p.score)} for p in snapshot.population],
        })

    def log_instance(self, entry, arrays: dict) -> None:
        """An instance's arrays and index line (once: one already recorded is skipped)."""
        if entry.instance_id in self._known_instances:
            return
        file = f"{entry.instance_id}.npz"
        save_instance(self.path / "instances" / file, entry.instance)
        self._known_instances.add(entry.instance_id)
        self._index.write({"kind": "instance", "instance_id": entry.instance_id, "origin": entry.origin,
                           "distance": json_number(entry.distance), "generation": entry.generation, "file": file,
                           "provenance": entry.provenance, **{k: v for k, v in arrays.items()}})

    def log_instance_set(self, version: int, entries, refreshes: int) -> None:
        if version in self._known_sets:
            return
        self._known_sets.add(version)
        self._index.write({"kind": "set", "version": version, "refreshes": refreshes,
                           "members": [e.instance_id for e in entries]})

    def log_scores(self, version: int, rescored, ids) -> None:
        for view, metrics in rescored:
            if self._known_scores[view.program_id, version] > 0:  # recorded before a kill, by the same refresh
                self._known_scores[view.program_id, version] -= 1
                continue
            self._scores.write({"program_id": view.program_id, "instance_set": version,
                                "score": json_number(view.score),
                                "metrics": {i: json_number(metrics.get(i)) for i in ids if i in metrics},
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
        self.lock.release()
