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
      lock                    the writer's advisory lock (fcntl.flock) and who holds it

Every JSONL line is flushed and fsync'd before the run goes on; JSON files are replaced
atomically. A line cut short by a kill is ignored on reading and cut off before appending;
a write the disk refuses (full, read-only) leaves its file as it was and stops the run in one
line (``durable.WriteFailed``).
One process writes a run directory at a time (``RunLock``). ``RunLog.load`` checks every
record it hands over; damaged ones are dropped (the file rewritten, the original kept as
``<file>.damaged``) or rebuilt from the other files, each repair reported in one line.
"""
from __future__ import annotations

import json
import logging
import math
import os
import socket
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .durable import AppendLog, replace_file
from .errors import UserError

__all__ = ["RunDirectory", "RunLog", "RunLock", "RunDirectoryBusy", "RunDirectoryDamaged", "save_instance",
           "load_instance", "load_config"]

LOCK_NAME = "lock"
NOMINAL_PREFIX = "nom-"  # a nominal instance's id: nom-INDEX-DIGEST of its arrays (``robust.instances``)
_log = logging.getLogger(__name__)


class RunDirectoryBusy(UserError):
    """Another process is writing the run directory."""


class RunDirectoryDamaged(UserError):
    """A run directory whose records cannot be repaired (the message says which file and why)."""


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
    replace_file(path, lambda fh: fh.write(json.dumps(_jsonable(data), indent=1).encode()))


def save_instance(path: Path, instance) -> None:
    """An instance (a dict of arrays and scalars) as ``.npz``, written atomically."""
    arrays = {}
    for key, value in (instance.items() if isinstance(instance, dict) else [("__value__", instance)]):
        arrays[str(key)] = np.asarray(value)
    replace_file(path, lambda fh: np.savez(fh, **arrays), suffix=".tmp.npz")


def load_instance(path: Path):
    """An instance written by ``save_instance``. Never unpickles: a file holding Python objects
    (a pickle planted in the run directory), or anything that is not such an ``.npz``, is a
    one-line ``RunDirectoryDamaged`` naming the file."""
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":  # an .npz is a zip archive
                raise RunDirectoryDamaged(f"{path}: not an instance file (not an .npz archive)")
        with np.load(path, allow_pickle=False) as data:
            out = {k: (data[k].item() if data[k].ndim == 0 else data[k]) for k in data.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        why = "it holds Python objects, which are never unpickled" if "pickle" in str(exc) else \
            f"not an instance file ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})"
        raise RunDirectoryDamaged(f"{path}: {why}") from None
    return out.get("__value__", out) if set(out) == {"__value__"} else out


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


class _Appender(AppendLog):
    def write(self, record: dict) -> None:
        self.append(json.dumps(_jsonable(record), allow_nan=False))


# -- one writer per run directory ------------------------------------------------------------

_held: dict[str, list] = {}  # realpath of a run directory -> [fd, holders] held by this process
_held_lock = threading.Lock()


def _forget_locks_in_child() -> None:
    # A forked child (a sandbox worker, the inner search) must not keep a run directory
    # locked after its parent died; closing its copy leaves the parent's lock in place.
    for fd, _ in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_locks_in_child)


class RunLock:
    """The advisory lock that makes one process the writer of a run directory.

    ``acquire()`` takes an exclusive ``fcntl.flock`` on ``RUN_DIR/lock`` without waiting and
    writes the holder (pid, host, command, start time) into it; when another process holds
    it, ``RunDirectoryBusy`` names that process. The kernel drops the lock when the holder
    exits, crashes or is killed, so a lock file left by a dead process is simply taken
    over. Within one process the lock is shared: acquiring it again is allowed and it is
    released when the last holder releases it (or the process ends).
    """

    def __init__(self, path: str | os.PathLike):
        self.directory = Path(path)
        self.file = self.directory / LOCK_NAME
        self._key: str | None = None

    def acquire(self) -> "RunLock":
        if self._key is not None:
            return self
        import fcntl
        self.directory.mkdir(parents=True, exist_ok=True)
        key = os.path.realpath(self.directory)
        with _held_lock:
            if key in _held:
                _held[key][1] += 1
                self._key = key
                return self
            fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise RunDirectoryBusy(f"{self.directory} is in use by {holder}; wait for it to end or stop it "
                                       "before running or resuming here") from None
            except OSError as exc:
                os.close(fd)
                raise RunDirectoryBusy(f"{self.directory}: cannot lock {self.file.name} "
                                       f"({exc.strerror or exc})") from None
            record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "command": " ".join([os.path.basename(sys.argv[0] or "python")] + sys.argv[1:]),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n"
            os.ftruncate(fd, 0)
            os.pwrite(fd, record.encode(), 0)
            os.fsync(fd)
            _held[key] = [fd, 1]
            self._key = key
        return self

    def release(self) -> None:
        if self._key is None:
            return
        with _held_lock:
            held = _held.get(self._key)
            if held is not None:
                held[1] -= 1
                if held[1] <= 0:
                    del _held[self._key]
                    os.close(held[0])  # closing the only descriptor releases the flock
            self._key = None

    @property
    def held(self) -> bool:
        return self._key is not None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def _read_holder(fd: int) -> str:
    """'process PID on HOST (COMMAND, since TIME)' from a lock file, as far as it says."""
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    where = f" on {info['host']}" if info.get("host") and info.get("host") != socket.gethostname() else ""
    details = ", ".join(x for x in (f"`{info['command']}`" if info.get("command") else "",
                                    f"since {info['since']}" if info.get("since") else "") if x)
    return f"process {info['pid']}{where}" + (f" ({details})" if details else "")


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
        self._samples = _Appender(self.path / "samples.jsonl")
        self._scores = _Appender(self.path / "scores.jsonl")
        self._population = _Appender(self.path / "population.jsonl")
        self._index = _Appender(self.path / "instances" / "index.jsonl")
        self._lock = threading.Lock()
        # what a resumed run recorded already: a refresh made again after a kill is not written twice
        index = read_jsonl(self.path / "instances" / "index.jsonl")
        self._known_instances = {r.get("instance_id") for r in index if r.get("kind") == "instance"}
        self._known_sets = {r.get("version") for r in index if r.get("kind") == "set"}
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
            "instance_set": view.instance_set_version, "score": _num(d["score"]), "joined": d["joined"],
            "duplicate": d["duplicate"], "broken": d["broken"], "error": view.error,
            "metrics": {k: _num(v) for k, v in view.metrics.items()},
            "failed_on": list(d["failed_on"]),
            "algorithm": view.program.algorithm, "function": view.program.code, "program": d["program"],
            "sample_time": _num(d.get("sample_time")), "evaluate_time": _num(d.get("evaluate_time")),
            **({"cursor": d["cursor"]} if d.get("cursor") else {}),
            **({"work": d["work"]} if d.get("work") else {}),
            **({"rejected": True, "admission_bound": _num(d["admission_bound"])} if d.get("rejected") else {}),
        })

    def log_population(self, snapshot) -> None:
        self.recorded_generation = max(self.recorded_generation, int(snapshot.generation))
        self._population.write({
            "generation": snapshot.generation, "samples": snapshot.samples,
            "instance_set": snapshot.instance_set_version,
            "members": [{"program_id": p.program_id, "score": _num(p.score)} for p in snapshot.population],
        })

    def log_instance(self, entry, arrays: dict) -> None:
        """An instance's arrays and index line (once: one already recorded is skipped)."""
        if entry.instance_id in self._known_instances:
            return
        file = f"{entry.instance_id}.npz"
        save_instance(self.path / "instances" / file, entry.instance)
        self._known_instances.add(entry.instance_id)
        self._index.write({"kind": "instance", "instance_id": entry.instance_id, "origin": entry.origin,
                           "distance": _num(entry.distance), "generation": entry.generation, "file": file,
                           "provenance": entry.provenance, **{k: v for k, v in arrays.items()}})

    def log_instance_set(self, version: int, entries, refreshes: int) -> None:
        if version in self._known_sets:
            return
        self._known_sets.add(version)
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
        self.lock.release()


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
        p = Path(path)
        if not p.is_dir():
            raise RunDirectoryDamaged(f"{p} is not a run directory (no such directory)")
        repairs: list[str] = []

        def repaired(message: str) -> None:
            repairs.append(message)
            (on_repair or _log.warning)(message)

        config = load_config(p)
        index = _checked_lines(p / "instances" / "index.jsonl", _valid_index, repaired)
        instances: dict[str, dict] = {}
        for r in index:
            if r.get("kind") == "instance":
                instances[r["instance_id"]] = r
        sets = [r for r in index if r.get("kind") == "set" and all(m in instances for m in r["members"])]
        for name, what in (("samples.jsonl", "every sample"), ("scores.jsonl", "the re-scoring records")):
            if not (p / name).exists() and (index or (p / "population.jsonl").exists()):
                repaired(f"{name} is missing; resuming without {what} recorded so far")
        samples = _checked_lines(p / "samples.jsonl", _valid_sample, repaired)
        # a duplicate sample number can only come from a line copied or rewritten: keep the first
        seen, unique = set(), []
        for s in samples:
            if s["sample"] not in seen:
                seen.add(s["sample"])
                unique.append(s)
        if len(unique) < len(samples):
            _rewrite(p / "samples.jsonl", unique)
            repaired(f"samples.jsonl: {len(samples) - len(unique)} line(s) repeating a sample number dropped (the "
                     "first kept); the original is kept as samples.jsonl.damaged")
        unique.sort(key=lambda s: s["sample"])  # samplers in threads may write their lines out of order
        unique, populations = _renumber(p, unique, _checked_lines(p / "population.jsonl", _valid_population,
                                                                  repaired), repaired)
        known = {s["program_id"] for s in unique}
        intact = [g for g in populations if all(m["program_id"] in known for m in g["members"])]
        if len(intact) < len(populations):
            last = intact[-1]["generation"] if intact else 0
            _rewrite(p / "population.jsonl", intact)
            repaired(f"population.jsonl: {len(populations) - len(intact)} generation record(s) name samples "
                     f"missing from samples.jsonl; resuming from generation {last}")
        scores = _checked_lines(p / "scores.jsonl", _valid_score, repaired)
        checkpoint = _checked_checkpoint(p, instances, sets, intact, repaired)
        return cls(path=p, config=config, samples=unique, scores=scores, populations=intact, instances=instances,
                   sets=sets, checkpoint=checkpoint, summary=_read_json(p / "summary.json"), repairs=repairs,
                   on_repair=on_repair)

    def repaired(self, message: str) -> None:
        """Report a repair made after loading (one rebuilt while the run is restored)."""
        self.repairs.append(message)
        (self.on_repair or _log.warning)(message)

    def instance(self, instance_id: str) -> Any:
        if instance_id not in self._cache:
            self._cache[instance_id] = load_instance(self.path / "instances" / self.instances[instance_id]["file"])
        return self._cache[instance_id]


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


# -- checking what a run directory holds --------------------------------------------------------

def load_config(p: Path) -> dict:
    """``RUN_DIR/config.json``, or a one-line ``RunDirectoryDamaged`` saying why it cannot be read."""
    path = p / "config.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RunDirectoryDamaged(f"{p} is not a run directory (no config.json)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise RunDirectoryDamaged(f"{path} is damaged (not valid JSON{where}); the run's configuration cannot "
                                  "be rebuilt from the other files: restore it from a copy") from None
    except OSError as exc:
        raise RunDirectoryDamaged(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not isinstance(data, dict):
        raise RunDirectoryDamaged(f"{path} is damaged (a JSON {type(data).__name__}, not an object of fields)")
    return data


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _optional(record: dict, key: str, kind) -> bool:
    return record.get(key) is None or isinstance(record[key], kind)


def _valid_sample(r: dict) -> bool:
    return (_is_int(r.get("sample")) and r["sample"] >= 1 and isinstance(r.get("program_id"), str)
            and isinstance(r.get("program"), str) and isinstance(r.get("function"), str)
            and _optional(r, "metrics", dict) and _optional(r, "failed_on", list)
            and _optional(r, "algorithm", str) and _optional(r, "error", str))


def _valid_score(r: dict) -> bool:
    return (isinstance(r.get("program_id"), str) and _is_int(r.get("instance_set"))
            and _optional(r, "metrics", dict) and _optional(r, "failed_on", list))


def _valid_population(r: dict) -> bool:
    members = r.get("members")
    return (_is_int(r.get("generation")) and _is_int(r.get("samples")) and isinstance(members, list)
            and all(isinstance(m, dict) and isinstance(m.get("program_id"), str) for m in members))


def _valid_index(r: dict) -> bool:
    if r.get("kind") == "instance":
        return isinstance(r.get("instance_id"), str) and isinstance(r.get("file"), str)
    if r.get("kind") == "set":
        return _is_int(r.get("version")) and isinstance(r.get("members"), list) and all(
            isinstance(m, str) for m in r["members"])
    return False


def _checked_lines(path: Path, valid: Callable[[dict], bool], repaired) -> list[dict]:
    """The well-formed records of a JSONL file. A last line cut short by a kill is dropped
    (it is cut off before the next append); other damaged lines are dropped and the file
    rewritten without them (the original kept as ``<name>.damaged``)."""
    if not path.exists():
        return []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RunDirectoryDamaged(f"{path}: cannot read it ({exc.strerror or exc})") from None
    lines = raw.split(b"\n")
    torn = lines[-1] != b""  # no newline at the end: the last write was cut short
    lines = lines[:-1]
    if torn:
        repaired(f"{path.name}: the last line was cut short (line {len(lines) + 1}); dropped")
    good, bad = [], []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            record = None
        if isinstance(record, dict) and valid(record):
            good.append(record)
        else:
            bad.append(number)
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        _rewrite(path, good)
        repaired(f"{path.name}: {len(bad)} damaged line(s) dropped (line {shown}); the original is kept "
                 f"as {path.name}.damaged")
    return good


def _rewrite(path: Path, records: list[dict]) -> None:
    """Replace a JSONL file by ``records`` (atomically), keeping the first damaged original."""
    backup = path.with_name(path.name + ".damaged")
    if path.exists() and not backup.exists():
        backup.write_bytes(path.read_bytes())
    replace_file(path, lambda fh: fh.write("".join(json.dumps(r, allow_nan=False) + "\n" for r in records).encode()))


def _renumber(p: Path, samples: list[dict], populations: list[dict], repaired) -> tuple[list[dict], list[dict]]:
    """Samples numbered 1..n again after lines were lost, so new samples continue without
    clashing; the population records' sample counts follow."""
    numbers = sorted(s["sample"] for s in samples)
    if numbers == list(range(1, len(samples) + 1)):  # complete (samplers in threads may log out of order)
        return samples, populations
    new = {old: k for k, old in enumerate(numbers, 1)}
    samples = [{**s, "sample": new[s["sample"]]} for s in samples]

    def count(old: int) -> int:
        return sum(1 for n in numbers if n <= old)

    populations = [{**g, "samples": count(g["samples"])} for g in populations]
    _rewrite(p / "samples.jsonl", samples)
    _rewrite(p / "population.jsonl", populations)
    repaired(f"samples.jsonl: samples renumbered 1..{len(samples)} after {max(numbers) - len(samples)} were "
             "lost; the population records follow")
    return samples, populations


def _checked_checkpoint(p: Path, instances: dict, sets: list[dict], populations: list[dict], repaired):
    """The checkpoint if it is sound, else one rebuilt from the instance index and the populations."""
    path = p / "checkpoint.json"
    data = _read_json(path)
    problem = None
    if data is None:
        problem = "missing" if not path.exists() else "damaged (not valid JSON)"
    elif not isinstance(data, dict):
        problem = "damaged (not an object)"
    else:
        ids = data.get("instance_set") or []
        if not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
            problem = "damaged (instance_set is not a list of instance ids)"
        elif any(i not in instances or not (p / "instances" / instances[i]["file"]).exists()
                 for i in ids if not i.startswith(NOMINAL_PREFIX)):  # a nominal one is rebuilt on restore
            lost = [i for i in ids if not i.startswith(NOMINAL_PREFIX) and i not in instances
                    and (p / "instances" / f"{i}.npz").exists()]
            if lost:  # its arrays are on disk, but where it came from (its provenance) is not
                raise RunDirectoryDamaged(
                    f"{p / 'instances' / 'index.jsonl'} has lost the record of adversarial instance {lost[0]}"
                    f"{f' and {len(lost) - 1} more' if len(lost) > 1 else ''}, which checkpoint.json names; it "
                    "cannot be rebuilt: restore the file from a copy")
            problem = "damaged (it names instances missing from instances/)"
        elif not all(_is_int(data.get(k, 0)) for k in ("generation", "samples", "instance_set_version",
                                                       "refreshes")):
            problem = "damaged (a counter is not an integer)"
    if problem is None and (data.get("generation", 0) <= (populations[-1]["generation"] if populations else 0)):
        return data
    if problem is None:  # sound, but ahead of the generation records that survived
        rebuilt = {"generation": populations[-1]["generation"] if populations else 0,
                   "samples": populations[-1]["samples"] if populations else 0,
                   **{k: data[k] for k in ("instance_set", "instance_set_version", "refreshes") if k in data}}
        repaired(f"checkpoint.json is ahead of the surviving generation records: keeping its instance set, "
                 f"resuming at generation {rebuilt['generation']} (the random states start afresh)")
        return rebuilt
    if not sets and not populations:
        if path.exists() or data is not None:
            repaired(f"checkpoint.json is {problem}; nothing recorded yet depends on it: starting afresh")
        return None
    last_set = sets[-1] if sets else None
    rebuilt = {"generation": populations[-1]["generation"] if populations else 0,
               "samples": populations[-1]["samples"] if populations else 0}
    if last_set is not None:
        rebuilt.update(instance_set=list(last_set["members"]), instance_set_version=last_set["version"],
                       refreshes=int(last_set.get("refreshes") or 0))
    repaired(f"checkpoint.json is {problem}; rebuilt from instances/index.jsonl and population.jsonl "
             f"(generation {rebuilt['generation']}, instance set version {rebuilt.get('instance_set_version', 0)}; "
             "the random states of selection and search start afresh)")
    return rebuilt
