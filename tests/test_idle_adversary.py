"""A robust run whose budget allows no refresh is refused before it starts, with the fix: its
adversary would never run, and the run would be a plain one under a robust name. Asked for
(``--allow-no-refresh``), it starts with a warning."""
from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from raise_plugin.cli import main
from raise_plugin.config import AdversarySettings, BudgetSettings, ConfigError, RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness import compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.resolve import resolve
from raise_plugin.robust import IdleAdversaryWarning, idle_adversary


@pytest.mark.parametrize("budget, pop_size, tau, unit, says", [
    (19, 4, 5, "generations", "makes 4 host generations, fewer than tau 5"),
    (3, 4, 1, "generations", "makes 0 host generations, fewer than tau 1"),
    (8, 4, 10, "samples", "ends its last generation after 8 samples, before tau 10 samples"),
    (3, 4, 2, "samples", "ends its last generation after 0 samples"),
])
def test_a_budget_that_allows_no_refresh_is_named_with_the_fix(budget, pop_size, tau, unit, says):
    why = idle_adversary(BudgetSettings(samples=budget, pop_size=pop_size), AdversarySettings(tau=tau, tau_unit=unit))
    assert says in why and "the adversary never runs" in why
    if unit == "generations":
        assert f"raise budget to {tau * pop_size}" in why
    else:
        assert f"raise budget to {-(-tau // pop_size) * pop_size}" in why
    assert ("lower tau" in why) == (budget >= pop_size)


@pytest.mark.parametrize("budget, pop_size, tau, unit", [(20, 4, 5, "generations"), (1000, 10, 5, "generations"),
                                                         (12, 4, 10, "samples"), (4, 4, 1, "generations")])
def test_a_budget_that_allows_a_refresh_says_nothing(budget, pop_size, tau, unit):
    budget_settings = BudgetSettings(samples=budget, pop_size=pop_size)
    assert idle_adversary(budget_settings, AdversarySettings(tau=tau, tau_unit=unit)) is None


@pytest.mark.parametrize("budget, pop_size, tau, unit, answers, fix", [
    (6, 2, 3, "generations", 4, "lower tau to 2"),  # the budget passes the answers: they make the generations
    (4, 2, 3, "generations", 4, "lower tau to 2"),
    (1, 2, 3, "generations", 4, "raise budget to 4 and lower tau to 2"),
    (1, 2, 3, "generations", 1, None),
    (8, 4, 10, "samples", 8, "lower tau to 8"),
])
def test_a_replay_s_fix_counts_the_answers_its_recording_holds(budget, pop_size, tau, unit, answers, fix):
    # a replay takes no more samples than its recorded answers: "raise budget to 6" gave 4 samples, no refresh
    why = idle_adversary(BudgetSettings(samples=budget, pop_size=pop_size), AdversarySettings(tau=tau, tau_unit=unit),
                         answers)
    bound = f"a replay takes no more samples than the {answers} answers its recording holds"
    assert why.endswith(f"{bound}: {fix}" if fix else f"{bound}, too few for a refresh at any tau"), why
    assert ("recorded answers it replays" in why) == (budget > answers)
    assert idle_adversary(BudgetSettings(samples=4, pop_size=2), AdversarySettings(tau=3), 12).endswith(
        "raise budget to 6 or lower tau to 2")  # answers enough for the budget the fix names: the usual fix
    assert idle_adversary(BudgetSettings(samples=6, pop_size=2), AdversarySettings(tau=3), 6) is None


def test_a_replay_refused_for_want_of_a_refresh_gives_a_fix_that_refreshes(tmp_path, capsys):
    recorded = tmp_path / "recorded"
    assert main(["run", *TINY, "--pop-size", "2", "--tau", "1", "--budget", "4", "--out", str(recorded)]) == 0
    capsys.readouterr()
    refused = ["run", "--llm", f"replay:{recorded}", "--no-progress", "--tau", "3"]
    assert main([*refused, "--budget", "6", "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("a replay takes no more samples than the 4 answers its recording holds: lower tau to "
                                "2 (or start it as it is with --allow-no-refresh)") and "raise budget" not in err
    assert not (tmp_path / "refused").exists()
    assert main(["run", "--llm", f"replay:{recorded}", "--no-progress", "--tau", "2", "--budget", "6",
                 "--out", str(tmp_path / "fixed")]) == 0
    assert json.loads((tmp_path / "fixed" / "summary.json").read_text())["refreshes"] == 1


def test_a_plain_run_says_nothing():
    assert resolve(RunConfig(task="ovrp", robust=False, budget=4, pop_size=4, tau=5))[1].idle is None
    assert resolve(RunConfig(task="ovrp", budget=4, pop_size=4, tau=5, allow_no_refresh=True))[1].idle


IDLE = ("budget 19 at pop_size 4 makes 4 host generations, fewer than tau 5: the adversary never runs and this "
        "robust run is a plain one; raise budget to 20 or lower tau to 4")
TINY = ["--task", "ovrp", "--pop-size", "4", "--tau", "5", "--nominal", "1", "--inner-population", "4",
        "--inner-generations", "1", "--no-validation-trace", "--no-progress"]


def test_a_robust_run_that_cannot_refresh_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", *TINY, "--budget", "19", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"raise-ahd: error: {IDLE} (or start it as it is with --allow-no-refresh)"
    assert not out.exists()


@pytest.mark.parametrize("budget, refreshes", [(19, 0), (20, 1)])
def test_asked_for_it_starts_with_a_warning_exactly_when_it_makes_no_refresh(tmp_path, capsys, budget, refreshes):
    out = tmp_path / "run"
    assert main(["run", *TINY, "--budget", str(budget), "--out", str(out), "--allow-no-refresh"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("raise-ahd: warning: ")]
    assert json.loads((out / "summary.json").read_text())["refreshes"] == refreshes
    assert warned == ([] if refreshes else [f"raise-ahd: warning: {IDLE}"])


def test_python_is_refused_in_one_error_and_hears_a_warning_when_it_asks(tmp_path):
    from raise_plugin.runner import start_run

    config = RunConfig(task="obp", budget=4, pop_size=4, tau=5, nominal=1, out=str(tmp_path / "run"))
    with pytest.raises(ConfigError, match="makes 1 host generations, fewer than tau 5.*--allow-no-refresh"):
        start_run(config)
    with pytest.warns(IdleAdversaryWarning, match="makes 1 host generations, fewer than tau 5"):
        run = start_run(dataclasses.replace(config, allow_no_refresh=True))
    run.recorder.close()


def test_a_compare_that_cannot_refresh_is_refused_before_anything_is_trained(tmp_path, monkeypatch):
    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)
    config = CompareConfig(task="obp", methods=("eoh",), budget=16, pop_size=4, seeds=(0,), out=str(tmp_path / "s"))
    with pytest.raises(UserError, match="every RAISE row would equal its plain twin's.*--allow-no-refresh"):
        compare.run_compare(config, quiet=True)
    assert not (tmp_path / "s").exists()
    with pytest.warns(IdleAdversaryWarning, match="every RAISE row will equal its plain twin's"), \
            pytest.raises(Planned):
        compare.run_compare(dataclasses.replace(config, allow_no_refresh=True), quiet=True)
    plain = dataclasses.replace(config, epsilons=(), out=str(tmp_path / "plain"))  # no RAISE row: nothing to refuse
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleAdversaryWarning)
        with pytest.raises(Planned):
            compare.run_compare(plain, quiet=True)
        with pytest.raises(Planned):
            compare.run_compare(CompareConfig(task="obp", methods=("eoh",), budget=20, pop_size=4, seeds=(0,),
                                              out=str(tmp_path / "enough")), quiet=True)


def test_a_compare_replaying_too_few_answers_for_a_refresh_is_refused_before_anything_is_trained(tmp_path, capsys,
                                                                                                  monkeypatch):
    recorded = tmp_path / "recorded"
    assert main(["run", *TINY, "--pop-size", "2", "--tau", "1", "--budget", "4", "--out", str(recorded)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(compare, "_train_and_evaluate", lambda *a, **k: pytest.fail("trained"))
    # budget 6 at pop_size 2 would make tau 3, but each run replays the 4 recorded answers: 2 generations
    config = CompareConfig(task="ovrp", methods=("eoh",), budget=6, pop_size=2, tau=3, nominal=1, seeds=(0,),
                           llm=f"replay:{recorded}", out=str(tmp_path / "s"))
    with pytest.raises(UserError, match="the 4 answers its recording holds: lower tau to 2 .*--allow-no-refresh"):
        compare.run_compare(config, quiet=True)
    assert not (tmp_path / "s").exists()
