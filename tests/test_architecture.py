"""The shape of the code, checked: imports run one way with no cycles (the import contracts in
pyproject.toml), imports sit at the top of a module unless they load an optional or heavy
dependency, no module reads another package's private names nor another module's private attributes
(the host's excepted), and no module is over 400 lines."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import llm4ad
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for package in ("raise_plugin", "tasks") for p in (ROOT / package).rglob("*.py"))
MAX_LINES = 400
# third-party modules a function may import where it needs them: the optional extras (numba, Dask,
# DEAP), the LLM client (loaded on a real endpoint's first use), matplotlib (loaded to draw),
# scipy.stats, whose 0.75 s of imports (scipy.optimize, scipy.spatial, ...) would be half of every
# command's start, and scipy.special, whose 14 MB a worker's spawner would otherwise hold, and
# copy into every program's process it forks (about 3 ms a job: benchmarks/engine_throughput.py)
LATE_IMPORTS = {"numba", "llvmlite", "dask", "distributed", "deap", "openai", "matplotlib", "scipy.stats",
                "scipy.special"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path) -> str:
    """The package a file belongs to: the dotted name of its folder."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_import_contracts_hold():
    """commands -> harness -> run -> robust -> adversary -> engine | llm | rundir -> tasks, no
    cycle among the siblings of any package, and no private module imported from outside its
    package (pyproject.toml, [tool.importlinter]); no contract carries an exception list. In a
    process of its own: import-linter reconfigures logging, silencing the loggers that exist."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, no_cache=True))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_contracts_list_no_exceptions():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert contracts and all("ignore_imports" not in c and "exhaustive_ignores" not in c for c in contracts)


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_module_is_short(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES})"


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _module_name(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_imports_at_top(path):
    """An import inside a function hides the graph; only the late dependencies above may."""
    late = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [_absolute(node, path)]
                else:
                    continue
                late += [f"l.{node.lineno} {n}" for n in names
                         if not any(n == m or n.startswith(f"{m}.") for m in LATE_IMPORTS)]
    assert not late, f"{path.relative_to(ROOT)} imports inside functions: {late}"


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_private_names_of_other_packages(path):
    """``from other.package import _name``, ``other_module._name`` and ``getattr(other_module,
    "_name")`` reach past another package's public surface."""
    tree = ast.parse(path.read_text())
    own = _package(path)
    modules = {}  # local name -> the module of another package it is bound to
    reads = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, path)
            for alias in node.names:
                if source.split(".")[0] in ("raise_plugin", "tasks") and _private(alias.name) \
                        and source != own and not source.startswith(own + "."):
                    reads.append(f"l.{node.lineno} from {source} import {alias.name}")
                modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    for node in ast.walk(tree):
        target = attr = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target, attr = node.value.id, node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            target, attr = node.args[0].id, node.args[1].value
        if target in modules and attr and _private(attr):
            source = modules[target]
            if source.split(".")[0] in ("raise_plugin", "tasks") and not (source + ".").startswith(own + "."):
                reads.append(f"l.{node.lineno} {source}.{attr}")
    assert not reads, f"{path.relative_to(ROOT)} reads private names of other packages: {reads}"


def _private_names_defined(tree: ast.AST) -> set[str]:
    """The private names a module makes: its functions and classes, the attributes it sets
    (``x._name = ...``, ``setattr(x, "_name", ...)``) and the ones its ``__slots__`` name."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            names.add(str(node.args[1].value))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets):
            names.update(str(c.value) for c in ast.walk(node.value) if isinstance(c, ast.Constant))
    return {n for n in names if _private(n)}


def _host_private_names() -> set[str]:
    """The private names the host's methods, their parts and its tools make: what a wrapper of the
    host must reach (its tasks, with their data, are left out)."""
    host = Path(llm4ad.__file__).parent
    return set().union(*(_private_names_defined(ast.parse(p.read_text(encoding="utf-8")))
                         for part in ("base", "method", "tools") for p in (host / part).rglob("*.py")))


def test_no_private_attribute_of_another_module_is_read():
    """``obj._name`` (``getattr(obj, "_name")``), where ``_name`` is made by another of the project's
    modules and not by the host, reaches past that module's public surface; ``self`` and ``cls``
    read their own."""
    trees = {path: ast.parse(path.read_text()) for path in SOURCES}
    made = {path: _private_names_defined(tree) for path, tree in trees.items()}
    ours = set().union(*made.values()) - _host_private_names()
    reads = []
    for path, tree in trees.items():
        elsewhere = ours - made[path]
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and _private(node.attr):
                owner = node.value
                if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) and not (
                        isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super"):
                    name = node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                  and _private(node.args[1].value)):
                name = node.args[1].value
            if name in elsewhere:
                reads.append(f"{path.relative_to(ROOT)} l.{node.lineno} {name}")
    assert not reads, f"private attributes of other modules read: {reads}"
