"""Checking what a run directory holds: which records are well formed, and how damaged files are
dropped, renumbered or rebuilt (each repair reported in one line through ``repaired``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from ..durable import journal_lines, replace_file
from .files import NOMINAL_PREFIX, RunDirectoryDamaged, read_json

__all__ = ["valid_sample", "valid_score", "valid_population", "valid_index", "checked_lines", "keep_damaged", "rewrite",
           "renumber", "checked_checkpoint"]


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _optional(record: dict, key: str, kind) -> bool:
    return record.get(key) is None or isinstance(record[key], kind)


def valid_sample(r: dict) -> bool:
    return (_is_int(r.get("sample")) and r["sample"] >= 1 and isinstance(r.get("program_id"), str)
            and isinstance(r.get("program"), str) and isinstance(r.get("function"), str)
            and _optional(r, "metrics", dict) and _optional(r, "failed_on", list)
            and _optional(r, "algorithm", str) and _optional(r, "error", str))


def valid_score(r: dict) -> bool:
    return (isinstance(r.get("program_id"), str) and _is_int(r.get("instance_set"))
            and _optional(r, "metrics", dict) and _optional(r, "failed_on", list))


def valid_population(r: dict) -> bool:
    members = r.get("members")
    return (_is_int(r.get("generation")) and _is_int(r.get("samples")) and isinstance(members, list)
            and all(isinstance(m, dict) and isinstance(m.get("program_id"), str) for m in members))


def valid_index(r: dict) -> bool:
    if r.get("kind") == "instance":
        return isinstance(r.get("instance_id"), str) and isinstance(r.get("file"), str)
    if r.get("kind") == "set":
        return _is_int(r.get("version")) and isinstance(r.get("members"), list) and all(
            isinstance(m, str) for m in r["members"])
    return False


def checked_lines(path: Path, valid: Callable[[dict], bool], repaired, meaning: str = "") -> list[dict]:
    """The well-formed records of a JSONL file. A last line cut short by a kill is dropped
    (it is cut off before the next append); other damaged lines (not JSON, not UTF-8 text, not
    ``valid``) are dropped and the file rewritten without them (the original kept as
    ``<name>.damaged``), the repair's line ending with ``meaning``: what their loss means."""
    if not path.exists():
        return []
    try:
        lines = journal_lines(path)
    except OSError as exc:
        raise RunDirectoryDamaged(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if lines and lines[-1].torn:
        repaired(f"{path.name}: the last line was cut short (line {lines[-1].number}); dropped")
        lines.pop()
    good, bad = [], []
    for line in lines:
        if isinstance(line.record, dict) and valid(line.record):
            good.append(line.record)
        else:
            bad.append(line.number)
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        rewrite(path, good)
        repaired(f"{path.name}: {len(bad)} damaged line(s) dropped (line {shown}); the original is kept "
                 f"as {path.name}.damaged" + (f"; {meaning}" if meaning else ""))
    return good


def keep_damaged(path: Path) -> Path:
    """A copy of the damaged file ``path`` kept as ``<name>.damaged`` (the first: a copy kept already stays)."""
    backup = path.with_name(path.name + ".damaged")
    if path.exists() and not backup.exists():
        backup.write_bytes(path.read_bytes())
    return backup


def rewrite(path: Path, records: list[dict]) -> None:
    """Replace a JSONL file by ``records`` (atomically), keeping the first damaged original."""
    keep_damaged(path)
    replace_file(path, lambda fh: fh.write("".join(json.dumps(r, allow_nan=False) + "\n" for r in records).encode()))


def renumber(p: Path, samples: list[dict], populations: list[dict], repaired) -> tuple[list[dict], list[dict]]:
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
    rewrite(p / "samples.jsonl", samples)
    rewrite(p / "population.jsonl", populations)
    repaired(f"samples.jsonl: samples renumbered 1..{len(samples)} after {max(numbers) - len(samples)} were "
             "lost; the population records follow")
    return samples, populations


def _made_at(instance_set: dict, instances: dict) -> int:
    """The generation at whose end ``instance_set`` was made: that of its newest member (0 for the nominal set)."""
    return max(((instances.get(i) or {}).get("generation") or 0 for i in instance_set["members"]), default=0)


def checked_checkpoint(p: Path, instances: dict, sets: list[dict], populations: list[dict], repaired):
    """The checkpoint if it is sound, else one rebuilt from the instance index and the populations."""
    path = p / "checkpoint.json"
    data = read_json(path)
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
    generation = populations[-1]["generation"] if populations else 0
    # the last set made by a refresh at or before the last recorded generation's end: a set made at the end
    # of a generation whose record the kill left unwritten is made again when that generation ends again
    made = [s for s in sets if _made_at(s, instances) <= generation]
    last_set = made[-1] if made else None
    rebuilt = {"generation": generation, "samples": populations[-1]["samples"] if populations else 0}
    if last_set is not None:
        rebuilt.update(instance_set=list(last_set["members"]), instance_set_version=last_set["version"],
                       refreshes=int(last_set.get("refreshes") or 0))
    first = not populations or (len(populations) == 1 and populations[0]["generation"] <= 1)
    if problem == "missing" and first and all(_made_at(s, instances) <= 1 for s in sets):
        # killed before the first checkpoint, which the first generation's end writes after its refresh and its
        # record: the run's first state is what that checkpoint starts from, as an older one is for a later kill
        return rebuilt
    repaired(f"checkpoint.json is {problem}; rebuilt from instances/index.jsonl and population.jsonl "
             f"(generation {rebuilt['generation']}, instance set version {rebuilt.get('instance_set_version', 0)}; "
             "the random states of selection and search start afresh)")
    return rebuilt
