"""The seed of a run's nominal instances, which no program it evaluates can know.

A task's public nominal set comes from fixed seeds, so a program can rebuild it from the task's
generator and plan with each instance's future without looking at it. A run therefore trains on
a nominal set drawn from a seed of its own, recorded in its ``config.json`` (which no program can
read: docs/engine.md). ``instance_seed``:

- ``private`` (the default): derived from the run's task and ``seed`` and this installation's
  private key (``~/.config/raise-plugin/instance-key``, made at the first run, readable by its
  owner only; programs never read the homes), so that the same seed gives the same run on this
  machine, and no program can compute it (where no key can be kept, each run draws one, said in a note);
- ``drawn``: from the operating system's entropy, a new one at every run;
- ``public``: the task's fixed seeds (the paper's nominal set), which a program can rebuild;
- an integer: that seed (a run recorded on another machine, repeated).
"""
from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from .errors import note_once

__all__ = ["resolve_instance_seed", "key_path", "nominal_set", "say_fixed_nominal", "say_if_no_private_key"]


def key_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "raise-plugin" / "instance-key"


def _private_key() -> bytes | None:
    """This installation's key (made once, 0600); ``None`` where it can be neither read nor made."""
    path = key_path()
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_hex(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key + "\n")
        return bytes.fromhex(key)
    except FileExistsError:  # made meanwhile by another run
        try:
            return bytes.fromhex(path.read_text().strip())
        except (OSError, ValueError):
            return None
    except OSError:
        return None


def resolve_instance_seed(value: str, task: str, seed: int) -> str:
    """``value`` (``private``, ``drawn``, ``public`` or digits) as a run records it: digits, or ``public``."""
    if value == "private":
        key = _private_key()
        if key is not None:
            digest = hashlib.sha256(key + f":{task}:{seed}".encode()).digest()
            return str(int.from_bytes(digest[:8], "little") >> 2)
        say_if_no_private_key(value, stacklevel=3)
        value = "drawn"  # no place for a key (a read-only home): a fresh seed, recorded as any other
    if value == "drawn":
        return str(secrets.randbits(62))
    return value


def say_if_no_private_key(value: str, stacklevel: int = 2) -> None:
    """Where ``value`` is ``private`` and this installation's key can be neither read nor made, a note,
    once in a process (``note_once``): each run then draws its seed, so the same seed no longer
    repeats a run; with the fix."""
    if value == "private" and _private_key() is None:
        note_once(f"no private key for the nominal instances' seed: {key_path()} can be neither read nor made, so "
                  "each run draws a new instance seed (recorded in its config.json) and the same --seed does not "
                  "repeat a run here; make that folder writable (or set XDG_CONFIG_HOME to a writable one), or "
                  "give --instance-seed N", stacklevel=stacklevel + 1)


def say_fixed_nominal(task, stacklevel: int = 2) -> None:
    """For a task that cannot draw a nominal set of its own, a note, once in a process
    (``note_once``): a program can rebuild the set it trains on; with the fix."""
    if not task.draws_nominal:
        note_once(f"task {task.name} has one nominal set, from fixed seeds: a program can rebuild it from the "
                  f"task's generator; let its make_nominal take a seed (docs/tasks.md)", stacklevel=stacklevel + 1)


def nominal_set(task, seed: int | None, count: int | None = None) -> list:
    """The nominal instances a run trains on: ``task``'s drawn from ``seed`` (``None``: its public
    set), the first ``count`` of them; a task that cannot draw a set of its own is said
    (``say_fixed_nominal``)."""
    nominal = task.nominal_instances(seed=seed)
    if seed is not None:
        say_fixed_nominal(task, stacklevel=4)
    return nominal if count is None else nominal[:count]
