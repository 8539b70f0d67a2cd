"""Robust settings left unset come from the task (chosen on its validation suite), else the paper's,
when the run starts; a name the task does not have fails there, before anything is written."""
from __future__ import annotations

import json

import pytest

from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.resolve import PAPER_DEFAULTS, resolve, with_task_defaults
from raise_plugin.runner import start_run


def test_obp_takes_its_validated_defaults_and_the_others_the_papers():
    assert RunConfig(task="obp").adversary.epsilon is None  # unset until the run starts
    obp = with_task_defaults(RunConfig(task="obp")).to_dict()
    assert (obp["epsilon"], obp["projection"], obp["adversary_objective"], obp["aggregation"]) == (
        0.01, "sphere", "regret:bestfit", "regret:bestfit:min")
    for task in ("ojsp", "ovrp", "knapsack", "cvrp"):
        c = with_task_defaults(RunConfig(task=task)).adversary
        assert (c.epsilon, c.aggregation, c.adversary_objective, c.inner_search.projection) == tuple(
            PAPER_DEFAULTS[k] for k in ("epsilon", "aggregation", "adversary_objective", "projection"))


def test_a_given_setting_wins_and_is_still_checked():
    c, _ = resolve(RunConfig(task="obp", epsilon=0.002, aggregation="mean"))
    adversary = c.adversary
    assert (adversary.epsilon, adversary.aggregation, adversary.inner_search.projection) == (0.002, "mean", "sphere")
    with pytest.raises(ConfigError, match="epsilon"):
        RunConfig(task="obp", epsilon=0.0)
    assert resolve(RunConfig(task="ovrp", aggregation="regret:min"))[0].adversary.aggregation == "regret:min"
    with pytest.raises(ConfigError, match=r"'aggregation'.*regret:\[NAME:\]min"):
        resolve(RunConfig(task="obp", aggregation="regret:median"))
    # a regret against one named rule: the name must be one of the task's baselines
    _, parts = resolve(RunConfig(task="ovrp", aggregation="regret:sp-insert:min", adversary_objective="regret:SP-Insert"))
    assert parts.adversary.aggregation_rule.reference == "sp-insert"
    with pytest.raises(ConfigError, match=r"^config field 'adversary_objective': task 'ovrp' has no classical "
                                          r"baseline 'bestfit' \(it has: NF-Insert, SP-Insert, UW-Insert\)$"):
        resolve(RunConfig(task="ovrp", adversary_objective="regret:bestfit"))
    with pytest.raises(ConfigError, match="^config field 'aggregation': task 'obp' has no classical baseline"):
        resolve(RunConfig(task="obp", aggregation="regret:worstfit:min"))


@pytest.mark.parametrize("fields, message", [
    ({"method": "nosuch"}, "^config field 'method': must be one of eoh, .*, got 'nosuch'$"),
    ({"task": "nosuch"}, "^config field 'task': must be one of .*, got 'nosuch'$"),
    ({"epsilon": 5.0}, "^config field 'epsilon': 5 is beyond the largest distance obp's distributions can reach"),
    ({"executor": "serial", "workers": 2}, "^config field 'workers': counts the local worker processes"),
    ({"llm": "replay:nowhere"}, "^config field 'llm': replay:nowhere: no such recording"),
    ({"nominal": 6}, "^config field 'nominal': obp has 5 nominal instances, got 6$")])  # it trained on 5, silently
def test_a_bad_name_fails_when_the_run_starts_before_anything_is_written(tmp_path, fields, message):
    config = RunConfig(**{"task": "obp", "out": str(tmp_path / "r"), **fields})  # what each value is: fine
    with pytest.raises(ConfigError, match=message) as raised:
        start_run(config)
    assert not (tmp_path / "r").exists()
    field = message.split("'")[1]  # the error names its field for a caller that names the setting its own way
    assert raised.value.field == field
    assert str(raised.value).startswith(f"config field {field!r}: {raised.value.reason}")


def test_the_run_directory_records_the_resolved_settings(tmp_path):
    run = start_run(RunConfig(task="obp", budget=4, pop_size=2, nominal=1, out=str(tmp_path / "r"),
                              host_profiler=False, validation_trace=False, allow_no_refresh=True))
    try:
        recorded = json.loads((tmp_path / "r" / "config.json").read_text())
    finally:
        run.recorder.close()
    assert recorded["epsilon"] == 0.01 and recorded["aggregation"] == "regret:bestfit:min"
    assert recorded["adversary_objective"] == "regret:bestfit" and recorded["projection"] == "sphere"


def test_a_run_recorded_before_task_defaults_resumes_with_the_papers_settings(tmp_path):
    """A config.json written when unset meant the paper's keeps meaning it: OBP's sphere
    default must not slip into a resumed run that started with the paper's projection."""
    from raise_plugin.runner import resume_run

    out = tmp_path / "r"
    run = start_run(RunConfig(task="obp", budget=2, pop_size=2, nominal=1, out=str(out), epsilon=0.002,
                              aggregation="mean", adversary_objective="metric", host_profiler=False,
                              validation_trace=False, allow_no_refresh=True))
    run.run()
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["projection"] == "sphere"
    recorded["projection"] = None  # as written before tasks had their own defaults
    (out / "config.json").write_text(json.dumps(recorded))
    resumed = resume_run(out, budget=3)
    try:
        assert json.loads((out / "config.json").read_text())["projection"] == "paper"
    finally:
        resumed.recorder.close()


def test_an_instance_seed_may_be_an_integer_as_its_setting_says(tmp_path):
    """instance_seed=5 (and `instance_seed = 5` in a TOML file) said "must be a string"; its help says
    "or an integer", and the flag took it."""
    assert RunConfig(task="ovrp", instance_seed=5).instance_seed == "5"
    (tmp_path / "seed.toml").write_text('task = "ovrp"\ninstance_seed = 7\n')
    assert RunConfig.from_toml(tmp_path / "seed.toml").instance_seed == "7"
    with pytest.raises(ConfigError, match=r"'instance_seed': must be 'private', 'drawn', 'public' or a non-negative "
                                          r"integer, got '-1'$"):
        RunConfig(task="ovrp", instance_seed=-1)
    for value in (True, 1.5):  # in a TOML file too: these said "must be a string", of a setting taking integers
        with pytest.raises(ConfigError, match=r"'instance_seed': must be 'private', 'drawn', 'public' or a "
                                              rf"non-negative integer, got {value!r}$"):
            RunConfig(task="ovrp", instance_seed=value)
    (tmp_path / "float.toml").write_text('task = "ovrp"\ninstance_seed = 1.5\n')
    with pytest.raises(ConfigError, match=r"'instance_seed': must be 'private', 'drawn', 'public' or a non-negative"):
        RunConfig.from_toml(tmp_path / "float.toml")


def test_a_settings_file_that_starts_with_a_byte_order_mark_is_read(tmp_path):
    """A file saved by Notepad starts with one: it was refused as "Invalid statement (at line 1, column 1)"."""
    (tmp_path / "bom.toml").write_bytes(b'\xef\xbb\xbftask = "ovrp"\nbudget = 9\n')
    config = RunConfig.from_toml(tmp_path / "bom.toml")
    assert (config.task, config.budget.samples) == ("ovrp", 9)
