"""--jit keeps a run's record: the characterisation runs record, on the compiled path, what
the Python path recorded (``tests/golden/characterisation.json``). Every program is compiled
at its first evaluation (``jit_after`` 0), and the offline sampler's programs compile, so these
runs evaluate almost every sample compiled."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("numba")

_HERE = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("characterisation_helper", _HERE / "test_characterisation.py")
characterisation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(characterisation)


@pytest.mark.slow
@pytest.mark.parametrize("task", characterisation.TASKS)
def test_a_characterisation_run_with_jit_records_what_it_records_without(task, tmp_path, monkeypatch):
    import raise_plugin.config as config_module
    import raise_plugin.runner  # noqa: F401 - bound to the plain class before the switch below

    @dataclasses.dataclass(frozen=True)
    class JitRunConfig(config_module.RunConfig):
        jit: bool = True
        jit_after: float = 0.0

    monkeypatch.setattr(config_module, "RunConfig", JitRunConfig)  # what characterise() builds
    golden = json.loads(characterisation.GOLDEN.read_text())[task]
    now = characterisation.characterise(task, tmp_path / task)
    tally = json.loads((tmp_path / task / "compiled.json").read_text())
    assert tally["programs_compiled"] >= now["count"]["samples"] // 2 and tally["programs_waiting"] == 0, tally
    assert now["count"] == golden["count"]
    changed = [k for k in ("samples", "scores", "populations", "instances", "checkpoint") if now[k] != golden[k]]
    assert not changed, f"{task}: with jit the run recorded other {', '.join(changed)} than without"
