"""A task named by its file or module: loaded without packaging, found again by name in child
processes, refused in one line when the reference is wrong."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tasks
from raise_plugin.cli import main
from raise_plugin.errors import UserError
from tasks import get_task, list_tasks, reference_of

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "load_balance.py"


@pytest.fixture
def task_file(tmp_path, fresh_registry):
    path = tmp_path / "my_task.py"
    path.write_text(EXAMPLE.read_text())
    return path


def test_a_file_reference_loads_the_class_and_registers_it_by_name(task_file, monkeypatch):
    monkeypatch.chdir(task_file.parent)
    task = get_task("my_task.py:LoadBalance")
    assert task.name == "load_balance" and type(task).__name__ == "LoadBalance"
    assert get_task("load_balance") is task and get_task(f"{task_file}:LoadBalance") is task
    assert reference_of(task) == f"{task_file.resolve()}:LoadBalance"
    assert "load_balance" in list_tasks() and "my_task.py:LoadBalance" in list_tasks()
    sources = json.loads(os.environ[tasks.SOURCES_VARIABLE])
    assert sources["load_balance"][0] == f"{task_file.resolve()}:LoadBalance"
    # the suites are the declaration's, from seeds of the task's name (not of the path)
    assert len(task.test_suite()) == 10 and sum(len(d.instances) for d in task.validation_suite()) == 10


def test_a_module_reference_imports_from_the_working_directory(tmp_path, fresh_registry, monkeypatch):
    package = tmp_path / "lbpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "balance.py").write_text(EXAMPLE.read_text().replace('name = "load_balance"', 'name = "lb_module"'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path), os.getcwd())])
    task = get_task("lbpkg.balance:LoadBalance")
    assert task.name == "lb_module" and reference_of(task) == "lbpkg.balance:LoadBalance"
    assert json.loads(os.environ[tasks.SOURCES_VARIABLE])["lb_module"] == ["lbpkg.balance:LoadBalance", str(tmp_path)]


def test_a_child_process_finds_a_loaded_task_by_its_name(task_file):
    get_task(f"{task_file}:LoadBalance")
    code = "from tasks import get_task; t = get_task('load_balance'); print(t.name, len(t.nominal_instances()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ}, cwd="/")
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert proc.stdout.split() == ["load_balance", "5"]


@pytest.mark.parametrize("reference, message", [
    ("missing.py:LoadBalance", "no such file"),
    ("{dir}:LoadBalance", "{dir} is a folder, not a file (a task file is named path/to/file.py:ClassName)"),
    ("my_task.py:Nope", "has no 'Nope'; it declares LoadBalance"),
    ("my_task.py:least_loaded", "least_loaded() did not make a task"),
    ("my_task.py:np", "np is a module, not a tasks.Task"),
    ("my_task.py:", "give path/to/file.py:Class or package.module:Class"),
    ("no_such_package.module:Task", "no module named 'no_such_package.module'"),
])
def test_a_bad_reference_is_one_line_naming_what_is_wrong(task_file, monkeypatch, reference, message):
    monkeypatch.chdir(task_file.parent)
    with pytest.raises(UserError) as caught:
        get_task(reference.format(dir=task_file.parent))
    assert message.format(dir=task_file.parent) in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_named_without_its_class_is_told_to_name_it(task_file, monkeypatch, capsys):
    monkeypatch.chdir(task_file.parent)
    with pytest.raises(UserError) as caught:
        get_task("my_task.py")
    assert str(caught.value) == ("task 'my_task.py': name the class: my_task.py:LoadBalance (the one task class "
                                 "found in the file)")
    (task_file.parent / "two.py").write_text("class Small:\n    pass\n\n\nclass Large(Small):\n    pass\n")
    with pytest.raises(UserError, match="name the class: two.py:ClassName; classes found in the file: Small, Large$"):
        get_task("two.py")
    (task_file.parent / "empty.py").write_text("x = 1\n")
    with pytest.raises(UserError, match="classes found in the file: none$"):
        get_task("empty.py")
    with pytest.raises(UserError, match=r"no such file .*missing.py \(a task file is named path/to/file.py:ClassName\)"):
        get_task("missing.py")
    assert "load_balance" not in list_tasks()  # nothing was run
    # each command says so in one line, whichever check meets the name first
    for argv in (["run", "--task", "my_task.py", "--budget", "4"], ["tasks", "--task", "my_task.py"],
                 ["evaluate", "--task", "my_task.py", "--suite", "nominal"],
                 ["compare", "--task", "my_task.py", "--budget", "4"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == ("raise-ahd: error: task 'my_task.py': name the class: "
                                           "my_task.py:LoadBalance (the one task class found in the file)\n")


def test_a_module_named_without_its_class_is_told_to_name_it(task_file, monkeypatch, capsys):
    """``package.module`` (no ``:Class``) said "unknown task"; the module is found and read, not run."""
    package = task_file.parent / "own_tasks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "balance.py").write_text(task_file.read_text())
    monkeypatch.syspath_prepend(str(task_file.parent))
    with pytest.raises(UserError) as caught:
        get_task("own_tasks.balance")
    assert str(caught.value) == ("task 'own_tasks.balance': name the class: own_tasks.balance:LoadBalance (the one "
                                 "task class found in the file)")
    assert "load_balance" not in list_tasks()  # nothing was run
    assert main(["run", "--task", "own_tasks.balance", "--budget", "4"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    for unknown in ("own_tasks.missing", "no_such_package.balance", "balance"):  # no module: as any unknown name
        with pytest.raises(KeyError, match="unknown task"):
            get_task(unknown)
    assert get_task("own_tasks.balance:LoadBalance").name == "load_balance"


def test_a_file_of_several_task_classes_named_without_its_class_is_told_them_all(task_file, monkeypatch):
    """It was told to name the first one, "the one task class found in the file"."""
    monkeypatch.chdir(task_file.parent)
    (task_file.parent / "two_tasks.py").write_text(task_file.read_text() + "\n\nclass Other(LoadBalance):\n    pass\n")
    with pytest.raises(UserError) as caught:
        get_task("two_tasks.py")
    assert str(caught.value) == ("task 'two_tasks.py': name the class: two_tasks.py:ClassName; task classes found in "
                                 "the file: LoadBalance, Other")


@pytest.mark.parametrize("reference, says", [
    ("{dir}/data.txt:Foo", "{dir}/data.txt is not a Python file: its name does not end in .py"),
    ("{dir}/no_suffix:LoadBalance", "{dir}/no_suffix is not a Python file: its name does not end in .py"),
    ("data.txt:Foo", "{dir}/data.txt is not a Python file: its name does not end in .py"),
    ("/dev/null:X", "/dev/null is a character device, not a regular file"),
])
def test_a_file_that_is_no_python_file_is_told_what_it_is_in_one_line(task_file, monkeypatch, capsys, reference, says):
    """Each was an AttributeError traceback (no module spec for the file), /dev/null "no such file"."""
    monkeypatch.chdir(task_file.parent)
    (task_file.parent / "data.txt").write_text("hello\n")
    (task_file.parent / "no_suffix").write_text(task_file.read_text())
    reference = reference.format(dir=task_file.parent)
    assert main(["tasks", "--task", reference]) == 2
    assert capsys.readouterr().err == (f"raise-ahd: error: task {reference!r}: {says.format(dir=task_file.parent)} "
                                       "(a task file is named path/to/file.py:ClassName)\n")


def test_errors_in_the_task_code_are_one_line_with_the_place(tmp_path, fresh_registry):
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\nraise RuntimeError('no data here')\n")
    with pytest.raises(UserError, match=r"broken.py, line 2: RuntimeError: no data here"):
        get_task(f"{broken}:Task")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def f(:\n")
    with pytest.raises(UserError, match=r"syntax.py, line 1: SyntaxError"):
        get_task(f"{syntax}:Task")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\x7fELF\x00\x01")
    with pytest.raises(UserError) as caught:  # no line to name: none named ("line None" was)
        get_task(f"{binary}:Task")
    assert str(caught.value) == (f"task '{binary}:Task': {binary}: SyntaxError: source code string cannot contain "
                                 "null bytes")
    bad = tmp_path / "bad_decl.py"
    bad.write_text(EXAMPLE.read_text().replace("validation_sizes = ({\"n\": 150, \"m\": 8},)",
                                               "validation_sizes = ({\"n\": 100, \"m\": 5},)"))
    with pytest.raises(UserError, match=r"validation_sizes: .* also test sizes"):
        get_task(f"{bad}:LoadBalance")


NOMINAL = "        return [self.make_instance(rng.integers(20, 61, size=200), rng) for rng in rngs]"
BASELINES = 'baselines = {"LeastLoaded": least_loaded, "FullestThatFits": fullest_that_fits}'
METRIC = "return 100.0 * (loads.max() / bound - 1.0)"
INSTANCE = 'return {"jobs": np.asarray(values, dtype=np.int64), "machines": int(m)}'
NAME = 'name = "load_balance"'


@pytest.mark.parametrize("mend, says", [
    ((NOMINAL, "        return [1, 2, 3]"),
     "LoadBalance.make_nominal gave int 1 as instance 0, not an instance (a dict)"),
    ((NOMINAL, "        return []"), "LoadBalance.make_nominal gave no instance"),
    ((NOMINAL, "        raise OSError('no data')"), "LoadBalance.make_nominal raised OSError: no data"),
    (('return instance["jobs"], MAX_SIZE', 'return instance["jobs"] * 10, MAX_SIZE'),
     "LoadBalance.shift_values gave values from 200 to 600 on nominal instance 0, outside [shift.low, high] = "
     "[1, 100]"),
    (('return instance["jobs"], MAX_SIZE', 'return instance["jobs"]'), "LoadBalance.shift_values gave a ndarray, not "
                                                                         "(values, high)"),
    (('cells=20)', 'cells=20, low=200)'), "outside [shift.low, high] = [200, 100]"),
    (('cells=20)', 'cells=2.5)'), "ValueError: cells must be a whole number, got 2.5"),
    (("template_program = '''\n", "template_program = '''\ndef oops(,):\n    pass\n"),
     "LoadBalance.template_program does not parse: line 2: invalid syntax"),
    (('{"LeastLoaded": least_loaded,', '{"LeastLoaded": 3,'), "LoadBalance.baselines['LeastLoaded'] is int 3, not a "
                                                               "function"),
    ((BASELINES, "baselines = {}"), "LoadBalance.baselines is empty: give at least one (name -> function)"),
    (("    return -loads", "    raise RuntimeError('baseline exploded')"),
     "LoadBalance.baselines['LeastLoaded'] fails on nominal instance 0: priority raised RuntimeError: baseline "
     "exploded"),
    ((METRIC, "return float('nan')"),
     "LoadBalance.evaluate gave nan (baseline 'LeastLoaded' on nominal instance 0), not a finite number"),
    ((METRIC, "return 'great'"),
     "LoadBalance.evaluate gave str 'great' (baseline 'LeastLoaded' on nominal instance 0), not a number"),
    ((METRIC, "raise RuntimeError('evaluate exploded')"),
     "LoadBalance.evaluate raised RuntimeError: evaluate exploded (baseline 'LeastLoaded' on nominal instance 0)"),
    ((INSTANCE, "if len(values) == 150:\n            raise RuntimeError('no such size')\n        " + INSTANCE),
     "LoadBalance.make_instance raised RuntimeError: no such size (building the validation suite)"),
    ((INSTANCE, "if len(values) == 100:\n            raise RuntimeError('no such size')\n        " + INSTANCE),
     "LoadBalance.make_instance raised RuntimeError: no such size (building the test suite)"),
    ((NAME, "name = 5"), "LoadBalance.name must be a non-empty string of letters, digits, '_', '-' and '.' (starting "
                         "with a letter or digit), got 5"),
    ((NAME, "name = ''"), "got ''"),
    ((NAME, "name = 'lb:x'"), "got 'lb:x'"),
    ((NAME, "name = 'a b/c:d'"), "got 'a b/c:d'")])
def test_a_task_whose_code_cannot_work_is_refused_when_it_is_loaded_naming_the_part(tmp_path, fresh_registry, capsys,
                                                                                     mend, says):
    """Each was a traceback in some command, a run that exited 0 on a histogram of clipped values or failed in its
    workers, or a refusal that blamed the sandbox for the task's own failure."""
    text = EXAMPLE.read_text()
    assert mend[0] in text
    (tmp_path / "lb.py").write_text(text.replace(mend[0], mend[1], 1))
    for argv in (["tasks", "--task", f"{tmp_path}/lb.py:LoadBalance"],
                 ["run", "--task", f"{tmp_path}/lb.py:LoadBalance", "--budget", "4", "--out", str(tmp_path / "r")],
                 ["evaluate", "--task", f"{tmp_path}/lb.py:LoadBalance", "--suite", "nominal", "--workers", "1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"raise-ahd: error: task '{tmp_path}/lb.py:LoadBalance': ") and says in err
        assert err.count("\n") == 1
    assert not (tmp_path / "r").exists() and "load_balance" not in list_tasks()


def test_every_task_of_the_project_passes_the_check_of_a_loaded_one():
    for name in ("obp", "ojsp", "ovrp", "knapsack", "cvrp"):
        get_task(name).check_behaviour()


def test_a_name_taken_by_another_task_is_refused(tmp_path, fresh_registry):
    clash = tmp_path / "clash.py"
    clash.write_text(EXAMPLE.read_text().replace('name = "load_balance"', 'name = "obp"'))
    with pytest.raises(UserError, match="its name 'obp' is taken"):
        get_task(f"{clash}:LoadBalance")


@pytest.mark.parametrize("argv", [
    ["tasks", "--task", "{dir}/missing.py:X"],
    ["evaluate", "--task", "{dir}/my_task.py:Nope", "--suite", "nominal"],
    ["run", "--task", "{dir}/my_task.py:Nope", "--budget", "4"],
    ["compare", "--task", "{dir}/my_task.py:Nope", "--budget", "4", "--out", "{dir}/cmp"],
    ["profile", "--task", "{dir}/my_task.py:Nope", "--compare", "all"],
    ["rerank", "{dir}", "--task", "{dir}/my_task.py:Nope"],
])
def test_every_command_refuses_a_bad_reference_in_one_line(task_file, capsys, argv):
    code = main([a.format(dir=task_file.parent) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("raise-ahd: error: task ") and err.count("\n") == 1


def test_the_tasks_command_describes_a_task_from_its_file(task_file, capsys):
    assert main(["tasks", "--task", f"{task_file}:LoadBalance"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("load_balance LoadBalance: shift job size, K = 20")
    assert "baselines: LeastLoaded, FullestThatFits" in out and "test suite 10 datasets, 30 instances" in out


def test_the_tasks_command_describes_a_task_of_one_nominal_instance(tmp_path, fresh_registry, capsys):
    """Its spread is 0: eps as a multiple of it was a ZeroDivisionError."""
    (tmp_path / "one.py").write_text(EXAMPLE.read_text().replace(NOMINAL[:-1] + "]", NOMINAL[:-1] + "][:1]"))
    assert main(["tasks", "--task", f"{tmp_path}/one.py:LoadBalance"]) == 0
    assert "nominal 1 instances, spread 0 (mean d between two of them); eps 0.002 = no multiple of the spread" in (
        capsys.readouterr().out)


def test_the_tasks_command_says_when_eps_is_beyond_what_a_task_can_reach(tmp_path, fresh_registry, capsys):
    """K = 100000 cells: it said "an L1 shift of 200" (no two distributions lie 2 apart), and nothing of the
    default eps a robust run then refused."""
    (tmp_path / "fine.py").write_text(EXAMPLE.read_text().replace("cells=20)", "cells=100000)"))
    assert main(["tasks", "--task", f"{tmp_path}/fine.py:LoadBalance"]) == 0
    out = capsys.readouterr().out
    assert "L1 shift" not in out
    assert "x spread, but 0.002 is beyond the largest distance load_balance's distributions can " \
           "reach from its nominal histograms (2e-05)\n" in out
    assert out.count("(2e-05)") == 2 and "(2e-05): a robust run needs a smaller --epsilon\n" in out
