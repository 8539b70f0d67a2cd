"""The one tree of settings (raise_plugin.settings): each setting has one name and one default,
written once, and the configs, the TOML files and every command's flags are made from it."""
from __future__ import annotations

import argparse
import re
import ast
import dataclasses
from pathlib import Path

import pytest

from raise_plugin import cli
from raise_plugin.adversary.adversary_config import AdversaryConfig, AdversaryConfigError, SearchConfig
from raise_plugin.config import RECORDED_ORDER, AdversarySettings, ConfigError, RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness.compare_config import CompareConfig, StudySettings
from raise_plugin.commands.flags import add_flags
from raise_plugin.settings import HARNESS, SETTINGS, TREE, Section, Setting, SettingError, flatten_tables

ROOT = Path(__file__).resolve().parents[1]
# options of a command that are not settings: what to read, a named study, a price entry
NOT_SETTINGS = {"--help", "--config", "--preset", "--price"}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _long_options(parser) -> list[tuple[str, argparse.Action]]:
    return [(o, a) for a in parser._actions for o in a.option_strings if o.startswith("--")]


def test_every_flag_a_help_names_is_a_flag_of_its_command():
    # a setting's help is shared by every command that takes it: where one command lacks a flag the
    # help names (compare has no --tau-unit), that command says it otherwise
    for command, parser in _parsers().items():
        own = {o for o, _ in _long_options(parser)}
        for option, action in _long_options(parser):
            named = set(re.findall(r"(--[a-z][a-z-]*[a-z])", action.help or "")) - own
            assert not named, f"{command} {option}: its help names {sorted(named)}, which {command} does not take"


def test_the_tree_holds_each_name_once_in_the_sections_the_run_is_built_from():
    names = [s.name for _, s in TREE.walk()] + [s.name for _, s in HARNESS.walk()]
    assert len(names) == len(set(names)) == len(SETTINGS)
    sections = {path for path, _ in TREE.walk()}
    assert {("run",), ("run", "budget"), ("run", "adversary"), ("run", "adversary", "inner_search"), ("run", "llm"),
            ("run", "engine"), ("run", "engine", "sandbox")} == sections


def test_every_flag_of_every_command_is_a_setting_of_the_tree_with_its_default_in_the_help():
    seen: dict[str, set] = {}
    for command, parser in _parsers().items():
        for option, action in _long_options(parser):
            if option in NOT_SETTINGS:
                continue
            name = option[2:].removeprefix("no-").replace("-", "_")
            assert name in SETTINGS, f"{command} {option} is not a setting of the tree"
            assert action.dest == name, (command, option, action.dest)
            if not action.required and action.help != argparse.SUPPRESS and option == SETTINGS[name].flag:
                assert "(default " in action.help, (command, option, action.help)
            seen.setdefault(name, set()).add(command)
    from raise_plugin.harness.api import PROFILE_EPSILONS
    assert f"default is {','.join(map(str, PROFILE_EPSILONS))})" in SETTINGS["epsilons"].help  # settings.md's row
    # the flags that are no settings show their defaults too
    for command, parser in _parsers().items():
        for option, action in _long_options(parser):
            if option in NOT_SETTINGS - {"--help"}:
                assert "(default " in action.help, (command, option, action.help)
    # the dialects once spoken: gone, each setting under its one flag
    flags = {o for p in _parsers().values() for o, _ in _long_options(p)}
    assert not flags & {"--robust-eps", "--eps", "--population", "--generations"}
    assert seen["epsilons"] == {"compare", "demo", "profile"} and seen["inner_population"] >= {"run", "compare",
                                                                                                "profile", "rerank"}
    assert seen["progress"] == {"run", "resume", "compare", "demo", "evaluate", "profile", "rerank"}


def test_switches_are_one_style_and_the_shown_default_is_the_tree_s():
    run = _parsers()["run"]
    options = dict(_long_options(run))
    for name in ("robust", "jit", "early_reject", "host_profiler", "validation_trace", "progress"):
        assert isinstance(options[SETTINGS[name].flag], argparse.BooleanOptionalAction), name
    assert "(default 8 distributions)" in options["--inner-population"].help
    assert "(default the task's, else 0.002)" in options["--epsilon"].help
    compare = dict(_long_options(_parsers()["compare"]))
    assert "(default 1000 samples)" in compare["--budget"].help and "(default 5 seeds)" in compare["--seeds"].help


def test_an_out_that_names_a_file_says_file_and_one_that_names_a_folder_says_dir():
    metavars = {command: dict(_long_options(parser))["--out"].metavar
                for command, parser in _parsers().items() if "--out" in dict(_long_options(parser))}
    assert metavars["select"] == metavars["evaluate"] == "FILE"  # a .py file, a CSV file
    assert metavars["run"] == metavars["compare"] == metavars["profile"] == "DIR"


def test_the_configs_take_their_fields_and_defaults_from_the_tree():
    flat = RunConfig().to_dict()
    assert set(flat) == {s.name for _, s in TREE.walk()} and list(flat) == list(RECORDED_ORDER)
    for name, value in flat.items():
        assert value == SETTINGS[name].default, name
    for path, section in _sections(TREE):  # a frozen config per section, a field per setting and per section
        holder = RunConfig()
        for name in path:
            holder = getattr(holder, name)
        own = [s.field_name for s in section.children if not isinstance(s, Section)]
        nested = [s.name for s in section.children if isinstance(s, Section)]
        assert [f.name for f in dataclasses.fields(holder)] == own + nested, path
    for f in dataclasses.fields(StudySettings):
        assert f.name in SETTINGS, f.name
    assert CompareConfig().study.seeds == tuple(range(SETTINGS["seeds"].default))
    assert isinstance(CompareConfig().runs, RunConfig)
    assert set(AdversaryConfig.__dataclass_fields__) == set(AdversarySettings.__dataclass_fields__) | {"switches"}
    assert SearchConfig(0.01).inner_population == SETTINGS["inner_population"].default
    assert SearchConfig(0.01).projection == SETTINGS["projection"].fallback


def _sections(section, path=()):
    for child in section.children:
        if isinstance(child, Section):
            yield path + (child.name,), child
            yield from _sections(child, path + (child.name,))


# names a function or a class field may use for something else than the setting of that name
OTHER_MEANINGS = {"seed", "progress", "method", "num_samplers", "num_evaluators", "workers", "timeout", "out"}
ALIASES = {"population": "inner_population"}  # the inner GA's own word (``InnerGA``: an optimiser, not a setting)


def test_no_default_of_a_setting_is_written_outside_the_tree():
    written = []
    for path in sorted((ROOT / "raise_plugin").rglob("*.py")):
        if path.name == "settings.py" and path.parent.name == "raise_plugin":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            pairs = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                positional = node.args.posonlyargs + node.args.args
                pairs += zip((a.arg for a in positional[len(positional) - len(node.args.defaults):]),
                             node.args.defaults)
                pairs += [(a.arg, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None]
            elif isinstance(node, ast.ClassDef):
                pairs += [(item.target.id, item.value) for item in node.body if isinstance(item, ast.AnnAssign)
                          and isinstance(item.target, ast.Name) and item.value is not None
                          and node.name != "TrainOutcome"  # what a job did, not a setting
                          and node.name != "SandboxLimits"]  # the engine's own: held equal to the tree's below
            for name, value in pairs:
                name = ALIASES.get(name, name)
                if (name in SETTINGS and name not in OTHER_MEANINGS and isinstance(value, ast.Constant)
                        and value.value is not None):
                    written.append(f"{path.relative_to(ROOT)}:{value.lineno} {name} = {value.value!r}")
    assert not written, "defaults written beside the tree:\n" + "\n".join(written)


def test_the_sandbox_s_limits_are_settings_whose_defaults_are_the_engine_s():
    from raise_plugin.engine import SandboxLimits

    sandbox = {s.name for path, s in TREE.walk() if path[-1] == "sandbox"}
    assert sandbox == {"timeout", "memory_mb", "file_mb", "output_mb"}
    engine = {f.name: f.default for f in dataclasses.fields(SandboxLimits)}
    for name in sandbox - {"timeout"}:  # the time per instance is the task's unless given
        assert SETTINGS[name].default == engine[name], name
    for command in ("run", "evaluate", "compare"):
        options = dict(_long_options(_parsers()[command]))
        assert {"--memory-mb", "--file-mb", "--output-mb", "--timeout"} <= set(options), command
        assert "(default 2048 MB)" in options["--memory-mb"].help


def test_evaluate_runs_every_program_under_the_sandbox_s_limits_it_is_given(monkeypatch, capsys):
    from raise_plugin.commands import evaluate

    seen = []
    monkeypatch.setattr(evaluate, "evaluate_suite", lambda *a, limits=None, **k: seen.append(limits) or [])
    cli.main(["evaluate", "--task", "obp", "--baselines", "BestFit", "--memory-mb", "256", "--file-mb", "1",
              "--output-mb", "0.25", "--no-progress"])
    assert [(l.memory_mb, l.file_mb, l.output_mb) for l in seen] == [(256, 1, 0.25)]
    capsys.readouterr()
    assert cli.main(["evaluate", "--task", "obp", "--baselines", "BestFit", "--memory-mb", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == ["raise-ahd: error: --memory-mb: must be >= 16 MB, got 8"], err


def test_a_bad_value_is_named_by_its_setting_in_every_config():
    with pytest.raises(ConfigError, match=r"^config field 'inner_population': must be >= 2 distributions, got 1$"):
        RunConfig(inner_population=1)
    with pytest.raises(ConfigError, match="'instances_per_refresh': must be one of one, draws"):
        RunConfig(instances_per_refresh="all")
    with pytest.raises(ConfigError, match="'inner_draws': must be >= 1 instances"):
        RunConfig(inner_draws=0)
    with pytest.raises(AdversaryConfigError, match="^adversary_objective: "):
        AdversaryConfig(epsilon=0.002, adversary_objective="worst")
    with pytest.raises(AdversaryConfigError, match="^draws: is now inner_draws, the setting's name$"):
        AdversaryConfig(epsilon=0.002, switches={"draws": 2})  # the old keyword is refused, not passed on
    with pytest.raises(AdversaryConfigError, match="^noice: not a setting of the inner search"):
        AdversaryConfig(epsilon=0.002, switches={"noice": "common"})
    with pytest.raises(Exception, match="^inner_population: must be >= 2"):
        CompareConfig(inner_population=1)
    with pytest.raises(ConfigError, match=r"^config field 'memory_mb': must be >= 16 MB, got 8$"):
        RunConfig(memory_mb=8)
    # past what the system's limits hold in bytes: every evaluation failed, said as 'the sandbox fails the task's own
    # baseline' (memory_mb) or an OverflowError (file_mb)
    for name in ("memory_mb", "file_mb"):
        with pytest.raises(ConfigError, match=rf"^config field '{name}': must be at most 524288 MB, got 10+$"):
            RunConfig(**{name: 10 ** 13})
    with pytest.raises(Exception, match="^'output_mb': must be >= 0 MB"):
        CompareConfig(output_mb=-1)
    with pytest.raises(SettingError, match="^budget: must be an integer, got 1.5"):
        SETTINGS["budget"].check(1.5)


def test_a_toml_file_may_hold_the_settings_flat_or_in_the_tree_s_sections(tmp_path):
    nested = tmp_path / "nested.toml"
    nested.write_text('[run]\ntask = "ovrp"\n[budget]\nbudget = 40\npop_size = 4\n[adversary]\ntau = 2\n'
                      '[adversary.inner_search]\ninner_population = 4\n[engine]\nearly_reject = false\n')
    flat = tmp_path / "flat.toml"
    flat.write_text('task = "ovrp"\nbudget = 40\npop_size = 4\ntau = 2\ninner_population = 4\nearly_reject = false\n')
    assert RunConfig.from_toml(nested) == RunConfig.from_toml(flat)
    assert RunConfig.from_toml(nested).adversary.inner_search.inner_population == 4
    twice = tmp_path / "twice.toml"
    twice.write_text('tau = 2\n[adversary]\ntau = 3\n')
    with pytest.raises(ConfigError, match="tau: given twice"):
        RunConfig.from_toml(twice)
    with pytest.raises(SettingError, match="tau: given twice"):
        flatten_tables({"adversary": {"tau": 1}, "tau": 2}, "x")


@pytest.mark.parametrize("tables, message", [
    ({"engine": {"sandbox": {"budget": 4}}}, r"^budget: is a setting of \[budget\], not of \[engine.sandbox\] where x"),
    ({"adversary": {"task": "ovrp"}}, r"^task: is a setting of \[run\], not of \[adversary\]"),
    ({"adversary": {"inner_search": {"tau": 2}}},
     r"^tau: is a setting of \[adversary\], not of \[adversary.inner_search"),
])
def test_a_setting_in_another_section_s_table_is_refused_naming_both(tables, message):
    with pytest.raises(SettingError, match=message):  # it was taken as if at the top level, silently
        flatten_tables(tables, "x")


def test_a_section_s_table_holds_its_settings_and_those_of_the_sections_under_it():
    given = {"run": {"seed": 1, "timeout": 5}, "engine": {"timeout": 6}, "sandbox": {"memory_mb": 512},
             "adversary": {"inner_population": 4}, "budget": {"budget": 8}}
    assert flatten_tables({k: v for k, v in given.items() if k != "engine"}, "x") == {
        "seed": 1, "timeout": 5, "memory_mb": 512, "inner_population": 4, "budget": 8}
    assert flatten_tables({"engine": {"timeout": 6}, "nope": 1}, "x") == {"timeout": 6, "nope": 1}  # unknown: later


def test_add_flags_shows_a_command_s_own_default_and_requires_what_it_must():
    parser = argparse.ArgumentParser()
    add_flags(parser, ("task", "epsilons", "progress"), defaults={"epsilons": (0.001, 0.01)}, required=("task",))
    options = dict(_long_options(parser))
    assert options["--task"].required and "(default" not in options["--task"].help
    assert "(default 0.001,0.01)" in options["--epsilons"].help
    args = parser.parse_args(["--task", "obp", "--epsilons", "0.002,0.005", "--no-progress"])
    assert args.epsilons == (0.002, 0.005) and args.progress is False
    with pytest.raises(SystemExit):
        parser.parse_args(["--task", "obp", "--epsilons", "a,b"])


@pytest.mark.parametrize("typed, expected, warned", [
    (["compare", "--robust-eps", "0.01"], ["compare", "--epsilons", "0.01"], "--robust-eps is now --epsilons"),
    (["profile", "--eps=0.01", "--seeds", "2", "--population", "4"],
     ["profile", "--epsilons=0.01", "--adversary-seeds", "2", "--inner-population", "4"], "--eps is now --epsilons"),
    (["run", "--early-reject", "off"], ["run", "--no-early-reject"], "--early-reject off is now --no-early-reject"),
    (["run", "--early-reject", "--budget", "4"], ["run", "--early-reject", "--budget", "4"], None),
    (["run", "--seeds", "2"], ["run", "--seeds", "2"], None),  # only the command's own renames
    # a command without the switch: left for its parser to refuse, not told of a --no-early-reject it lacks
    (["compare", "--early-reject", "off"], ["compare", "--early-reject", "off"], None),
])
def test_a_renamed_flag_still_works_and_says_its_new_name(typed, expected, warned, capsys):
    assert cli.renamed(typed) == expected
    err = capsys.readouterr().err
    assert (warned in err) if warned else err == ""


def test_setting_check_follows_kind_low_and_choices():
    s = Setting("x", 1, "int", "", low=1)
    assert s.check(3) == 3
    for bad in (0, True, "3", 2.0):
        with pytest.raises(SettingError):
            s.check(bad)
    eps = SETTINGS["epsilons"]
    assert eps.check(None) is None and eps.check((0.1, 0.2)) == (0.1, 0.2)
    with pytest.raises(SettingError, match="must be > 0"):
        eps.check((0.1, 0.0))


def test_the_settings_page_is_the_tree_written_out():
    from raise_plugin.settings_page import markdown

    assert (ROOT / "docs" / "settings.md").read_text().strip() == markdown().strip(), \
        "docs/settings.md is behind the tree: python -m raise_plugin.settings_page > docs/settings.md"


def test_a_changed_copy_keeps_the_rest_of_the_section_and_replace_cannot_reset_it_quietly():
    config = RunConfig(task="obp", budget=40, pop_size=8, llm="offline", max_tokens=99)
    changed = config.replace(budget=50, llm="replay:run")
    assert (changed.budget.samples, changed.budget.pop_size) == (50, 8)
    assert (changed.llm.backend, changed.llm.max_tokens) == ("replay:run", 99)
    assert dataclasses.replace(config, seed=3).budget == config.budget  # whole sections pass through
    for flat in ({"budget": 50}, {"llm": "offline"}):  # one setting beside the other sections, whole
        with pytest.raises(TypeError, match=r"use config\.replace"):
            dataclasses.replace(config, **flat)
    with pytest.raises(TypeError, match="^RunConfig: unknown field 'nope'$"):
        RunConfig(nope=1)


def test_a_misspelt_or_shortened_keyword_is_told_the_setting_it_may_mean():
    from raise_plugin.harness.compare_config import CompareConfig

    for make, given, meant in ((RunConfig, "eps", "epsilon"), (RunConfig, "budgte", "budget"),
                               (RunConfig, "pop", "pop_size"), (CompareConfig, "eps", "epsilons"),
                               (CompareConfig, "sedes", "seeds")):
        with pytest.raises(UserError, match=rf"unknown field '{given}' \(did you mean '{meant}'\?\)$"):
            make(**{given: 1})  # a UserError, one line, as a TOML file's unknown key; still a TypeError too
