"""A run directory read back for resume: every record checked, damaged ones repaired (``repair``)."""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import BadArgumentType, UnknownName, UserError
from .files import RunDirectoryDamaged, load_instance, read_json
from .lock import LOCK_NAME
from .repair import (checked_checkpoint, checked_lines, renumber, rewrite, valid_index, valid_population, valid_sample,
                     valid_score)

__all__ = ["RunLog", "ALWAYS_RECORDED", "load_config", "load_summary", "finished_summary", "read_summary", "holds",
           "check_holds_run", "rescored"]

_log = logging.getLogger("raise_plugin.rundir")

# the settings every run directory's config.json has recorded, from the first one written; those
# added since may be missing from an older run's (``resolve.recorded_settings`` fills them in)
ALWAYS_RECORDED = ("task", "method", "robust", "epsilon", "tau", "inner_population", "inner_generations",
                   "aggregation", "max_adversarial", "budget", "pop_size", "llm", "seed", "out", "num_samplers",
                   "num_evaluators", "nominal", "timeout", "projection", "encoding", "constraint", "host_profiler")


@dataclass
class RunLog:
    """Everything a run directory holds, read back and checked (lines cut short by a kill are skipped).

    ``load`` hands over only well-formed records: a damaged line is dropped, a population
    record naming a lost sample falls back to the last intact generation, a missing or
    damaged checkpoint is rebuilt from the instance index and the population records.
    ``repairs`` lists what was done, one line each. What cannot be rebuilt (the config)
    raises ``RunDirectoryDamaged`` with one line saying which file and why.
    """

    path: Path
    config: dict
    samples: list[dict]
    scores: list[dict]
    populations: list[dict]
    instances: dict[str, dict]
    sets: list[dict]
    checkpoint: dict | None
    summary: dict | None = None
    repairs: list[str] = field(default_factory=list)
    on_repair: Callable[[str], None] | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: str | os.PathLike, *, on_repair: Callable[[str], None] | None = None) -> "RunLog":
        """Read ``path``; ``on_repair(message)`` is told of every repair (default: a log warning)."""
        if not isinstance(path, (str, os.PathLike)):
            raise BadArgumentType(f"path: RunLog.load takes a run directory's path, got {type(path).__name__} "
                                  f"{path!r:.40}")
        p = Path(path)
        if not p.is_dir():
            raise RunDirectoryDamaged(f"{p} is not a run directory ({'a file' if p.exists() else 'no such directory'})")
        repairs: list[str] = []

        def repaired(message: str) -> None:
            repairs.append(message)
            (on_repair or _log.warning)(message)

        config = load_config(p)
        index = checked_lines(p / "instances" / "index.jsonl", valid_index, repaired)
        instances: dict[str, dict] = {}
        for r in index:
            if r.get("kind") == "instance":
                instances[r["instance_id"]] = r
        sets = [r for r in index if r.get("kind") == "set" and all(m in instances for m in r["members"])]
        for name, what in (("samples.jsonl", "every sample"), ("scores.jsonl", "the re-scoring records")):
            if not (p / name).exists() and (index or (p / "population.jsonl").exists()):
                repaired(f"{name} is missing; resuming without {what} recorded so far")
        samples = checked_lines(p / "samples.jsonl", valid_sample, repaired)
        # a duplicate sample number can only come from a line copied or rewritten: keep the first
        seen, unique = set(), []
        for s in samples:
            if s["sample"] not in seen:
                seen.add(s["sample"])
                unique.append(s)
        if len(unique) < len(samples):
            rewrite(p / "samples.jsonl", unique)
            repaired(f"samples.jsonl: {len(samples) - len(unique)} line(s) repeating a sample number dropped (the "
                     "first kept); the original is kept as samples.jsonl.damaged")
        unique.sort(key=lambda s: s["sample"])  # samplers in threads may write their lines out of order
        unique, populations = renumber(p, unique, checked_lines(p / "population.jsonl", valid_population,
                                                                  repaired), repaired)
        known = {s["program_id"] for s in unique}
        intact = [g for g in populations if all(m["program_id"] in known for m in g["members"])]
        if len(intact) < len(populations):
            last = intact[-1]["generation"] if intact else 0
            rewrite(p / "population.jsonl", intact)
            repaired(f"population.jsonl: {len(populations) - len(intact)} generation record(s) name samples "
                     f"missing from samples.jsonl; resuming from generation {last}")
        scores = checked_lines(p / "scores.jsonl", valid_score, repaired)
        checkpoint = checked_checkpoint(p, instances, sets, intact, repaired)
        return cls(path=p, config=config, samples=unique, scores=scores, populations=intact, instances=instances,
                   sets=sets, checkpoint=checkpoint, summary=read_json(p / "summary.json"), repairs=repairs,
                   on_repair=on_repair)

    def repaired(self, message: str) -> None:
        """Report a repair made after loading (one rebuilt while the run is restored)."""
        self.repairs.append(message)
        (self.on_repair or _log.warning)(message)

    def instance(self, instance_id: str) -> Any:
        """The instance the run recorded as ``instance_id`` (a key of ``instances``), read once."""
        if instance_id not in self.instances:
            known = list(self.instances)
            raise UnknownName(f"instance_id: the run records no instance {instance_id!r}; it records "
                              f"{', '.join(known[:5]) or 'none'}{', ...' if len(known) > 5 else ''}")
        if instance_id not in self._cache:
            self._cache[instance_id] = load_instance(self.path / "instances" / self.instances[instance_id]["file"])
        return self._cache[instance_id]


def load_config(p: Path, *, whole: bool = False) -> dict:
    """``RUN_DIR/config.json``, or a one-line ``RunDirectoryDamaged`` saying why it cannot be read.
    ``whole``: also refused when it lacks a setting every run directory has recorded
    (``ALWAYS_RECORDED``), as a reader that continues, replays or chooses from the run reads it: the
    setting's default in its place would make it another run. A page that shows what a run
    recorded reads it as it is."""
    path = Path(p) / "config.json"
    if not path.exists():
        raise RunDirectoryDamaged(f"{p} is not a run directory (no config.json)")
    fix = "the run's configuration cannot be rebuilt from the other files: restore it from a copy"
    config = _json_object(path, fix)
    lacking = [name for name in ALWAYS_RECORDED if name not in config] if whole else []
    if lacking:
        raise RunDirectoryDamaged(f"{path} lacks {', '.join(map(repr, lacking))}, which every run records; {fix}")
    return config


def load_summary(p: Path) -> dict | None:
    """``RUN_DIR/summary.json``; ``None`` when the run wrote none (it has not ended), a one-line
    ``RunDirectoryDamaged`` when it cannot be read (``raise-ahd resume`` writes it again)."""
    if not (Path(p) / "summary.json").exists():
        return None
    return _json_object(Path(p) / "summary.json", f"resume the run to write it again (raise-ahd resume {p})")


def rescored(scores: dict[str, float], records: list[dict], after: int, until: float = math.inf) -> dict[str, float]:
    """``scores`` (id -> robust score, as a population record holds them) with their re-scores in ``records``
    (``scores.jsonl``) on the instance sets after version ``after`` up to ``until``, the last recorded winning:
    a refresh re-scores the members after their population is recorded."""
    out = dict(scores)
    for record in records:
        if record["program_id"] in out and after < record["instance_set"] <= until and record["score"] is not None:
            out[record["program_id"]] = float(record["score"])
    return out


def finished_summary(p: Path) -> dict:
    """``RUN_DIR/summary.json`` of a finished run, or a one-line ``UserError``: a run that has not
    finished (or wrote no summary) is resumed, a summary that records no best is damaged."""
    summary = load_summary(p) or {}
    if not summary.get("finished"):
        raise UserError(f"{p}: the run has not finished (raise-ahd resume {p})")
    if "best" not in summary:  # a finished run records its best, None when no program was valid
        raise RunDirectoryDamaged(f"{Path(p) / 'summary.json'} records no best program: it is damaged; resume the "
                                  f"run to write it again (raise-ahd resume {p})")
    return summary


def _json_object(path: Path, fix: str) -> dict:
    """The JSON object in ``path``, or a one-line ``RunDirectoryDamaged`` saying why not, and ``fix``."""
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise RunDirectoryDamaged(f"{path} is damaged (not valid JSON{where}); {fix}") from None
    except OSError as exc:
        raise RunDirectoryDamaged(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise RunDirectoryDamaged(f"{path} is damaged (a JSON {type(data).__name__}, not an object of fields); {fix}")
    return data


def read_summary(p: Path) -> dict | None:
    """``RUN_DIR/summary.json``, or ``None`` when the run wrote none (it did not end) or it cannot be read."""
    try:
        data = json.loads((Path(p) / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def holds(folder: str | os.PathLike) -> str | None:
    """What ``folder`` already holds that a run or a compare must not write into: ``"a run"`` (its
    ``config.json`` or ``samples.jsonl``), ``"a compare"`` (its ``compare.json``), else ``None``."""
    folder = Path(folder)
    if (folder / "config.json").exists() or (folder / "samples.jsonl").exists():
        return "a run"
    return "a compare" if (folder / "compare.json").exists() else None


def check_holds_run(path: str | os.PathLike) -> None:
    """A one-line ``UserError`` when ``path`` holds no run to resume: no such directory, no
    ``config.json``, or a run stopped before its configuration was written (its lock alone)."""
    if not isinstance(path, (str, os.PathLike)):
        raise UserError(f"resume_run takes a run directory's path, got {path!r}")
    folder = Path(path)
    if (folder / "config.json").exists():
        return
    if (folder / LOCK_NAME).exists() and all(f.is_dir() or f.name in (LOCK_NAME, "config.json.tmp")
                                             or f.stat().st_size == 0 for f in folder.rglob("*")):
        raise UserError(f"{path} holds no run yet: it stopped before its configuration was written; start "
                        f"it again with `raise-ahd run ... --out {path}`")
    missing = "no config.json" if folder.is_dir() else "a file" if folder.exists() else "no such directory"
    raise UserError(f"{path} is not a run directory ({missing})")
