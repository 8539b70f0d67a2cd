"""The seed of a run's nominal instances, and what is said of a task that cannot draw its own."""
from __future__ import annotations

import warnings
from pathlib import Path

from raise_plugin import errors
from raise_plugin.errors import SandboxNote
from raise_plugin.instance_seeds import nominal_set
from tasks import get_task

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "load_balance.py"


def notes_of(task, seed) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:  # as each run of a compare starts: filters afresh
        warnings.simplefilter("default")
        nominal_set(task, seed)
    return [str(w.message) for w in caught if issubclass(w.category, SandboxNote)]


def test_a_fixed_nominal_set_is_said_once_in_a_process_not_at_every_run(fresh_registry, monkeypatch):
    monkeypatch.setattr(errors, "_NOTED", set(), raising=False)
    task = get_task(f"{EXAMPLE}:LoadBalance")
    assert not task.draws_nominal
    first = notes_of(task, 7)
    assert len(first) == 1 and first[0].startswith("task load_balance has one nominal set, from fixed seeds")
    assert notes_of(task, 8) == [] and notes_of(task, 7) == []
    assert notes_of(get_task("obp"), 7) == []  # a task that draws its own set: nothing to say
    assert len(nominal_set(task, 8, count=2)) == 2
