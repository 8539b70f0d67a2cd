"""A compare's settings of the wrong type or given twice stop it with one line naming the setting, from a
``--config`` file, a flag, ``CompareConfig`` or ``rp.compare``; a list setting's TOML list and comma string
(``methods = "eoh,reevo"``) mean what its flag means."""
from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import raise_plugin as rp
from raise_plugin.cli import main
from raise_plugin.commands import compare as compare_command
from raise_plugin.errors import UserError
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.variants import plan_variants


@pytest.fixture(autouse=True)
def nothing_is_trained(monkeypatch, tmp_path):
    """Every case here is refused (or compared) before training: a compare that starts is a failure."""
    def started(*args, **kwargs):
        raise AssertionError("the compare started")

    monkeypatch.setattr(compare_command, "run_compare", started)
    monkeypatch.setattr("raise_plugin.harness.api.run_compare", started)
    monkeypatch.chdir(tmp_path)


def _refused(capsys, argv) -> str:
    """The one line ``raise-ahd`` stops with, having checked it stopped with status 2 and no traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def _from_toml(tmp_path, text: str) -> list:
    path = tmp_path / "F.toml"
    path.write_text(f'task = "ovrp"\n{text}\n')
    return ["compare", "--config", str(path)] + ([] if text.startswith("progress") else ["--no-progress"])


@pytest.mark.parametrize("line, message", [
    ("seeds = [0, 1]", "seeds: must be an integer, got [0, 1] (a count: the runs take seeds 0..N-1)"),
    ("seeds = 2.5", "seeds: must be an integer, got 2.5"),
    ("seeds = 1e400", "seeds: must be an integer, got inf"),
    ("seeds = true", "seeds: must be an integer, got True"),
    ("seeds = 100000000000", "seeds: must be at most 1000 seeds, got 100000000000"),  # a MemoryError
    ("epsilons = [0.002, -0.1]", "epsilons: must be > 0, got -0.1"),  # the bad item, not the list's repr
    ('epsilons = "0.002,x"', "epsilons: must be numbers, got 'x'"),
    ('epsilons = ["a"]', "epsilons: must be numbers, got 'a'"),
    ("epsilons = [true]", "epsilons: must be numbers, got True"),
    ("epsilons = [1e400]", "epsilons: must be finite numbers, got inf"),
    ("epsilons = {}", "epsilons: must be a list of numbers or a comma-separated string, got {}"),
    ("epsilons = [0.002, 0.002]", "epsilons: 0.002 given twice"),
    ('epsilons = "0.002,0.01,0.002"', "epsilons: 0.002 given twice"),
    ("epsilons = [0.002, 0.0020000001]", "epsilons: 0.002 and 0.0020000001 both name the runs eps0.002"),
    ("methods = 5", "methods: must be a list of names or a comma-separated string, got 5"),
    ('methods = ["eoh", "eoh"]', "methods: 'eoh' given twice"),
    ('methods = "eoh,reevo,eoh"', "methods: 'eoh' given twice"),
    ("budget = 8\nout = 5", "out: must be a directory's path, got 5"),
    ('out = ""', "out: must be a directory's path, got ''"),
    ("executor = 3", "executor: must be a string, got 3"),
    ("select_on = 3", "select_on: must be a string, got 3"),
    ("progress = 5", "progress: must be true or false, got 5"),
    ('reuse = "sometimes"', "reuse: must be one of matching, never, any, got 'sometimes'"),
    ('figure_formats = ["png", "gif"]', "figure_formats: must be one of png, pdf, svg, got 'gif'"),
    ("figure_formats = []", "figure_formats: give one or more of png, pdf, svg"),
    ('figure_formats = "png,PNG"', "figure_formats: 'png' given twice"),
    ("prices = 3", "'prices': must be a table, got 3"),  # a TypeError's traceback: 'int' object is not a mapping
    ('prices = ["gpt-x", 1, 2]', "'prices': must be a table, got ['gpt-x', 1, 2]"),
])
def test_a_bad_value_in_a_config_file_is_one_line_naming_its_setting(tmp_path, capsys, line, message):
    assert _refused(capsys, _from_toml(tmp_path, line)) == f"raise-ahd: error: {message}"


@pytest.mark.parametrize("flags, message", [
    (["--methods", "eoh,eoh"], "methods: 'eoh' given twice"),
    (["--epsilons", "0.002,0.002"], "epsilons: 0.002 given twice"),
    (["--epsilons", "0.01,0.002,0.010"], "epsilons: 0.01 given twice"),
    (["--figure-formats", "svg,svg"], "figure_formats: 'svg' given twice"),
    (["--figure-formats", "png,eps"], "figure_formats: must be one of png, pdf, svg, got 'eps'"),
])
def test_a_value_given_twice_in_a_flag_is_refused_naming_it(capsys, flags, message):
    argv = ["compare", "--task", "ovrp", "--no-progress", *flags]
    assert _refused(capsys, argv) == f"raise-ahd: error: {message}"


def _config(tmp_path, toml: str | None = None, flags: tuple = ()) -> dict:
    parser = argparse.ArgumentParser()
    compare_command.add_compare_arguments(parser)
    argv = ["--task", "ovrp", *flags]
    if toml is not None:
        path = tmp_path / "F.toml"
        path.write_text(toml + "\n")
        argv += ["--config", str(path)]
    args = parser.parse_args(argv)
    args.given = {a[2:].replace("-", "_") for a in argv if a.startswith("--")}
    return compare_command.config_from(args).to_dict()


def test_a_toml_list_and_a_comma_string_mean_what_the_flag_means(tmp_path):
    flag = _config(tmp_path, flags=("--methods", "eoh,reevo", "--epsilons", "0.002,0.01"))
    assert (flag["methods"], flag["epsilons"]) == (("eoh", "reevo"), (0.002, 0.01))
    assert _config(tmp_path, 'methods = ["eoh", "reevo"]\nepsilons = [0.002, 0.01]') == flag
    assert _config(tmp_path, 'methods = "eoh, reevo"\nepsilons = "0.002,0.01"') == flag
    one = _config(tmp_path, flags=("--epsilons", "0.002"))
    assert _config(tmp_path, "epsilons = 0.002") == _config(tmp_path, "epsilons = [0.002]") == one
    assert _config(tmp_path, 'methods = "eoh"') == _config(tmp_path) == _config(tmp_path, 'methods = ["eoh"]')
    assert _config(tmp_path, "seeds = 2")["seeds"] == (0, 1)


def test_what_is_reused_and_the_figures_files_are_settings_of_the_tree_with_one_default(tmp_path):
    """``reuse`` and ``figure_formats`` were flags of compare alone: a config file could not give them,
    and ``rp.compare`` wrote PNG alone where the command wrote PNG and PDF."""
    flags = _config(tmp_path, flags=("--reuse", "never", "--figure-formats", "svg,pdf"))
    assert (flags["reuse"], flags["figure_formats"]) == ("never", ("svg", "pdf"))
    assert _config(tmp_path, 'reuse = "never"\nfigure_formats = ["svg", "pdf"]') == flags
    assert _config(tmp_path, '[harness]\nreuse = "never"\nfigure_formats = "svg,pdf"') == flags
    assert _config(tmp_path, 'reuse = "any"', flags=("--reuse", "never"))["reuse"] == "never"  # the flag wins
    defaults = _config(tmp_path)
    assert (defaults["reuse"], defaults["figure_formats"]) == ("matching", ("png", "pdf"))
    study = CompareConfig(task="ovrp").study
    assert (study.reuse, study.figure_formats) == ("matching", ("png", "pdf"))  # Python's defaults are the same


def test_compare_config_takes_a_comma_string_and_a_path_as_the_command_line_does(tmp_path):
    base = dict(task="ovrp", budget=8, pop_size=4)
    listed = CompareConfig(**base, methods=("eoh", "reevo"), epsilons=(0.002, 0.01), out=str(tmp_path / "c"))
    assert CompareConfig(**base, methods="eoh,reevo", epsilons="0.002, 0.01", out=tmp_path / "c") == listed
    assert CompareConfig(**base, epsilons=0.002).study.epsilons == (0.002,)
    assert CompareConfig(**base, methods=["eoh"], seeds=[3, 1]).study.seeds == (3, 1)


def test_a_task_given_as_itself_is_compared_under_its_name_and_an_unregistered_one_is_refused():
    """``task=rp.get_task("ovrp")``, as ``profile`` takes it, was refused as 'task: unknown <Task ovrp>; choose from
    cvrp, knapsack, obp, ojsp, ovrp'."""
    task = rp.get_task("ovrp")
    assert CompareConfig(task=task, budget=8) == CompareConfig(task="ovrp", budget=8)

    class Unregistered(type(task)):
        name = "ovrp-copy"

    with pytest.raises(UserError, match=r"^task: 'ovrp-copy' is not a registered task: register it \(rp.register"):
        CompareConfig(task=Unregistered())


@pytest.mark.parametrize("run, message", [
    (dict(method="reevo"), "runs: method='reevo' is not passed to a compare's runs; give the compare's methods= "),
    (dict(epsilon=0.01), "runs: epsilon=0.01 is not passed to a compare's runs; give the compare's epsilons= "),
    (dict(robust=False), "runs: robust=False is not passed to a compare's runs; give the compare's epsilons= (an "),
    (dict(seed=3), "runs: seed=3 is not passed to a compare's runs; give the compare's seeds= instead"),
    (dict(max_adversarial=3), "runs: max_adversarial=3 is not passed to a compare's runs; a compare trains at its "),
])
def test_a_runs_config_that_sets_what_a_compare_does_not_give_its_runs_is_refused(run, message):
    """``CompareConfig(runs=RunConfig(method="reevo", epsilon=0.01, max_adversarial=3))`` trained EoH at the task's
    eps with every instance kept, saying nothing; the settings a compare passes on are taken."""
    with pytest.raises(UserError) as caught:
        CompareConfig(runs=rp.RunConfig(task="ovrp", **run))
    assert str(caught.value).startswith(message)
    passed = CompareConfig(runs=rp.RunConfig(task="ovrp", budget=8, tau=1, memory_mb=1024))
    assert passed == CompareConfig(task="ovrp", budget=8, tau=1, memory_mb=1024)
    assert CompareConfig(runs=passed.runs, study=passed.study) == passed


def test_numpy_numbers_are_taken_as_the_python_numbers_they_are(monkeypatch):
    """A notebook's ``seeds=np.arange(2)`` or ``budget=np.int64(8)`` was refused as not an integer ('seeds: must be
    an integer, got np.int64(0)'), and ``rp.compare``'s count ``seeds=np.int64(2)`` as not the seeds themselves."""
    np = pytest.importorskip("numpy")
    given = CompareConfig(task="ovrp", budget=np.int64(8), pop_size=np.int32(4), tau=np.int64(1), seeds=np.arange(2),
                          epsilons=np.array([0.002, 0.01]), suite_instances=np.int64(1), ablations=np.False_,
                          timeout=np.float32(2.5), workers=np.int64(1))
    plain = CompareConfig(task="ovrp", budget=8, pop_size=4, tau=1, seeds=(0, 1), epsilons=(0.002, 0.01),
                          suite_instances=1, ablations=False, timeout=2.5, workers=1)
    assert given == plain and given.to_dict() == plain.to_dict()
    assert [type(v) for v in (given.runs.budget.samples, *given.study.seeds)] == [int, int, int]
    taken = []
    monkeypatch.setattr("raise_plugin.harness.api.run_compare", lambda config, **kw: taken.append(config))
    rp.compare("ovrp", seeds=np.int64(2), budget=8, pop_size=4, tau=1)
    assert taken[0].study.seeds == (0, 1)


@pytest.mark.parametrize("settings, message", [
    (dict(seeds=3), "seeds: must be the seeds themselves (a list of integers), got 3"),
    (dict(seeds=(0, 1, 0)), "seeds: 0 given twice"),
    (dict(seeds="01"), "seeds: must be the seeds themselves (a list of integers), got '01'"),
    (dict(methods="eoh,eoh"), "methods: 'eoh' given twice"),
    (dict(methods=None), "methods: must be a list of names or a comma-separated string, got None"),
    (dict(epsilons=(0.01, 0.002, 0.01)), "epsilons: 0.01 given twice"),
    (dict(epsilons=float("nan")), "epsilons: must be finite numbers, got nan"),
    (dict(out=5), "out: must be a directory's path, got 5"),
    (dict(out=None), "out: must be a directory's path, got None"),
    (dict(executor=2), "executor: must be a string, got 2"),
    (dict(select_on=3), "select_on: must be a string, got 3"),
    # a set's order changed with PYTHONHASHSEED, and the order of the tables' rows, compare.json and the jobs with it
    (dict(methods={"eoh"}), "methods: give a list or a tuple, in the order the tables show them: a set has no "
                            "order, got {'eoh'}"),
    (dict(epsilons=frozenset([0.01])), "epsilons: give a list or a tuple, in the order the tables show them: a set "
                                       "has no order, got frozenset({0.01})"),
])
def test_compare_config_refuses_a_bad_type_or_a_repeat_in_one_line(settings, message):
    with pytest.raises(UserError) as caught:
        CompareConfig(task="ovrp", **settings)
    assert str(caught.value) == message


@pytest.mark.parametrize("settings, message", [
    (dict(methods="eoh,eoh"), "methods: 'eoh' given twice"),
    (dict(epsilons="0.002,0.002"), "epsilons: 0.002 given twice"),
    (dict(seeds=(1, 1)), "seeds: 1 given twice"),
    (dict(out=5), "out: must be a directory's path, got 5"),
    (dict(seeds=2.5), "seeds: must be the seeds themselves (a list of integers), got 2.5"),  # a TypeError
    (dict(seeds=True), "seeds: must be the seeds themselves (a list of integers), got True"),  # one seed
    (dict(seeds=0), "seeds: must be >= 1 seeds, got 0"),
    (dict(seeds=10**11), "seeds: must be at most 1000 seeds, got 100000000000"),  # a MemoryError
    (dict(seeds=tuple(range(1001))), "seeds: at most 1000 seeds, got 1001"),
    (dict(epsilons=True), "epsilons: must be a list of numbers or a comma-separated string, got True"),  # eps 1
])
def test_rp_compare_refuses_a_bad_type_or_a_repeat_in_one_line(settings, message):
    with pytest.raises(UserError) as caught:
        rp.compare("ovrp", **settings)
    assert str(caught.value) == message


@pytest.mark.parametrize("command, seeds", [("compare", "100000000000"), ("compare", "9999999999999999999999"),
                                            ("demo", "99999999999")])
def test_a_seed_count_past_the_bound_is_refused_in_one_line(capsys, command, seeds):
    assert _refused(capsys, [command, "--seeds", seeds, "--no-progress"]) == \
        f"raise-ahd: error: seeds: must be at most 1000 seeds, got {seeds}"  # a MemoryError, an OverflowError
    assert _refused(capsys, ["compare", "--epsilons", "-0.1", "--no-progress"]) == \
        "raise-ahd: error: epsilons: must be > 0, got -0.1"  # not the tuple (-0.1,)


def test_select_on_is_named_once_in_its_error():
    with pytest.raises(UserError) as caught:
        CompareConfig(task="ovrp", select_on="nominal")
    assert str(caught.value).startswith("select_on: 'nominal' is not a suite to select on here")


def test_plan_variants_refuses_two_variants_of_one_name():
    with pytest.raises(ValueError, match="eoh-plain"):
        plan_variants(["eoh", "eoh"], [])
    with pytest.raises(ValueError, match="eoh-raise-eps0.002"):
        plan_variants(["eoh"], [0.002, 0.0020000001])
    assert [v.key for v in plan_variants(["eoh"], [0.002])] == ["eoh-plain", "eoh-raise-eps0.002"]


def test_a_path_given_as_out_is_recorded_as_text(tmp_path):
    assert CompareConfig(task="ovrp", out=Path(tmp_path / "c")).to_dict()["out"] == str(tmp_path / "c")
