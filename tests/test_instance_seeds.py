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


def test_a_private_seed_with_no_place_for_its_key_is_said_once_with_the_fix(tmp_path, monkeypatch):
    """Where the key could be neither read nor made (a home that is a file, or read-only), each run silently
    drew a new seed: the same command with the same --seed gave another run, with no word of why."""
    from raise_plugin.harness.job_place import say_notes
    from raise_plugin.instance_seeds import resolve_instance_seed

    monkeypatch.setattr(errors, "_NOTED", set(), raising=False)
    (tmp_path / "home").write_text("a file, not a folder\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        seeds = {resolve_instance_seed("private", "ovrp", 0) for _ in range(2)}
        say_notes(get_task("ovrp"), "private", offline=False)  # a compare's notes, before its jobs: not again
    assert len(seeds) == 2  # drawn, as before: what is new is that it is said
    said = [str(w.message) for w in caught if issubclass(w.category, SandboxNote) and "private key" in str(w.message)]
    assert said == [f"no private key for the nominal instances' seed: {tmp_path / 'home'}/raise-plugin/instance-key "
                    "can be neither read nor made, so each run draws a new instance seed (recorded in its config.json) "
                    "and the same --seed does not repeat a run here; make that folder writable (or set XDG_CONFIG_HOME "
                    "to a writable one), or give --instance-seed N"], said
    monkeypatch.setattr(errors, "_NOTED", set(), raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        assert resolve_instance_seed("public", "ovrp", 0) == "public" and resolve_instance_seed("7", "ovrp", 0) == "7"
    assert not caught  # a seed that needs no key: nothing to say
