"""The run directory's files: JSON-safe values, atomic JSON files, JSONL lines and instance archives."""
from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import numpy as np

from ..durable import AppendLog, journal_lines, replace_file
from ..errors import UserError

__all__ = ["RunDirectoryDamaged", "NOMINAL_PREFIX", "json_number", "jsonable", "write_json_atomic", "read_json",
           "read_jsonl", "JsonlAppender", "save_instance", "load_instance"]

NOMINAL_PREFIX = "nom-"  # a nominal instance's id: nom-INDEX-DIGEST of its arrays (``robust.instances``)


class RunDirectoryDamaged(UserError):
    """A run directory whose records cannot be repaired (the message says which file and why)."""


def json_number(x):
    """A JSON-safe number: finite floats as they are, anything else (None, -inf, NaN) as null."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(value):
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return json_number(value)
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    return repr(value)


def write_json_atomic(path: Path, data) -> None:
    """``data`` (made JSON-safe: ``jsonable``) as the JSON file ``path``, replaced whole
    (``durable.replace_file``) by text made before the file is opened."""
    text = json.dumps(jsonable(data), indent=1).encode()
    replace_file(path, lambda fh: fh.write(text))


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
    """The records of the JSONL file ``path`` (none when it does not exist); a damaged line (cut
    short by a kill, not JSON, not UTF-8 text) is passed over (``durable.journal_lines``)."""
    return [line.record for line in journal_lines(path) if not line.damaged]


class JsonlAppender(AppendLog):
    """A JSONL file appended one JSON-safe record a line at a time."""


    def write(self, record: dict) -> None:
        self.append(json.dumps(jsonable(record), allow_nan=False))


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
