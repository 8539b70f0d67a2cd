"""A robust run whose budget allows no refresh says so before it starts: its adversary would
never run, and the run would be a plain one under a robust name."""
from __future__ import annotations

import json
import warnings

import pytest

from raise_plugin.cli import main
from raise_plugin.config import IdleAdversaryWarning, RunConfig, idle_adversary
from raise_plugin.harness import compare
from raise_plugin.harness.compare_config import CompareConfig


@pytest.mark.parametrize("budget, pop_size, tau, unit, says", [
    (19, 4, 5, "generations", "makes 4 host generations, fewer than tau 5"),
    (3, 4, 1, "generations", "makes 0 host generations, fewer than tau 1"),
    (8, 4, 10, "samples", "ends its last generation after 8 samples, before tau 10 samples"),
    (3, 4, 2, "samples", "ends its last generation after 0 samples"),
])
def test_a_budget_that_allows_no_refresh_is_named_with_the_fix(budget, pop_size, tau, unit, says):
    why = idle_adversary(budget, pop_size, tau, unit)
    assert says in why and "the adversary never runs" in why
    if unit == "generations":
        assert f"raise budget to {tau * pop_size}" in why
    else:
        assert f"raise budget to {-(-tau // pop_size) * pop_size}" in why
    assert ("lower tau" in why) == (budget >= pop_size)


@pytest.mark.parametrize("budget, pop_size, tau, unit", [(20, 4, 5, "generations"), (1000, 10, 5, "generations"),
                                                         (12, 4, 10, "samples"), (4, 4, 1, "generations")])
def test_a_budget_that_allows_a_refresh_says_nothing(budget, pop_size, tau, unit):
    assert idle_adversary(budget, pop_size, tau, unit) is None


def test_a_plain_run_says_nothing():
    assert RunConfig(robust=False, budget=4, pop_size=4, tau=5).idle_adversary() is None


@pytest.mark.parametrize("budget, refreshes", [(19, 0), (20, 1)])
def test_the_warning_comes_exactly_when_the_run_makes_no_refresh(tmp_path, capsys, budget, refreshes):
    out = tmp_path / "run"
    assert main(["run", "--task", "obp", "--budget", str(budget), "--pop-size", "4", "--tau", "5", "--nominal", "1",
                 "--inner-population", "4", "--inner-generations", "1", "--no-validation-trace",
                 "--out", str(out), "--no-progress"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("raise-ahd: warning: ")]
    assert json.loads((out / "summary.json").read_text())["refreshes"] == refreshes
    if refreshes:
        assert not warned
    else:
        assert warned == ["raise-ahd: warning: budget 19 at pop_size 4 makes 4 host generations, fewer than tau 5: "
                          "the adversary never runs and this robust run is a plain one; raise budget to 20 or lower "
                          "tau to 4"]


def test_python_hears_it_as_a_warning(tmp_path):
    from raise_plugin.runner import start_run

    with pytest.warns(IdleAdversaryWarning, match="makes 1 host generations, fewer than tau 5"):
        run = start_run(RunConfig(task="obp", budget=4, pop_size=4, tau=5, nominal=1, out=str(tmp_path / "run")))
    run._recorder.close()


def test_a_compare_that_cannot_refresh_says_its_raise_rows_will_equal_the_plain_ones(tmp_path, monkeypatch):
    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)  # the warning comes before any training
    config = CompareConfig(task="obp", methods=("eoh",), budget=16, pop_size=4, seeds=(0,), out=str(tmp_path))
    with pytest.warns(IdleAdversaryWarning, match="every RAISE row will equal its plain twin's"), \
            pytest.raises(Planned):
        compare.run_compare(config, quiet=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleAdversaryWarning)
        with pytest.raises(Planned):
            compare.run_compare(CompareConfig(task="obp", methods=("eoh",), budget=20, pop_size=4, seeds=(0,),
                                              out=str(tmp_path / "enough")), quiet=True)
