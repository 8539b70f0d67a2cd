"""Turning program text (an LLM sample, a heuristic file) into a callable heuristic."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Callable

__all__ = ["ProgramError", "check_program", "compile_priority", "load_priority", "function_names"]


class ProgramError(Exception):
    """The program text cannot give a heuristic; the message is a one-line reason."""


def function_names(code: str) -> list[str]:
    """Names of the top-level functions defined in ``code`` (``ProgramError`` on bad syntax)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ProgramError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parse(code: str, source: str) -> ast.Module:
    try:
        return ast.parse(code, source)
    except SyntaxError as exc:
        raise ProgramError(f"{source}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes in the text
        raise ProgramError(f"{source}: cannot parse the program: {exc}") from None
    except (RecursionError, MemoryError):  # an expression nested past what the parser holds (1+1+...+1)
        raise ProgramError(f"{source}: cannot parse the program: it is nested too deeply") from None


def _chosen(functions: dict, name: str | None, source: str):
    if name is None:
        if "priority" in functions:
            return functions["priority"]
        if len(functions) == 1:
            return next(iter(functions.values()))
        found = ", ".join(functions) or "none"
        raise ProgramError(f"{source}: expected one function or one named 'priority' (found: {found})")
    if name not in functions:
        raise ProgramError(f"{source}: no top-level function named {name!r}")
    return functions[name]


def _assigns(tree: ast.Module, name: str) -> bool:
    """Whether the module's top level assigns ``name`` (``name = lambda ...``, ``name = np.subtract``)."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def _accepts(node: ast.FunctionDef, count: int) -> bool:
    """Whether a call with ``count`` positional arguments matches the function's parameters."""
    a = node.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    kwonly_required = sum(1 for d in a.kw_defaults if d is None)
    return required <= count and (count <= positional or a.vararg is not None) and not kwonly_required


def check_program(code: str, name: str | None = None, *, source: str = "<program>",
                  template: str | None = None) -> str:
    """The name of the program's heuristic function, found by parsing ``code`` without running it.

    Checks the syntax, that the function exists (``name``, or the only top-level function,
    or the one called ``priority``) and, given the task's ``template`` program, that it takes
    the template function's positional arguments. ``ProgramError`` (one line) otherwise.
    """
    tree = _parse(code, source)
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if name is None and "priority" not in functions and len(functions) != 1 and _assigns(tree, "priority"):
        raise ProgramError(f"{source}: 'priority' is assigned (priority = ...), not defined with def: "
                           f"write it as def priority(...): ...")
    node = _chosen(functions, name, source)
    if isinstance(node, ast.AsyncFunctionDef):
        raise ProgramError(f"{source}: {node.name!r} is a coroutine (async def), not a function")
    if template is not None:
        wanted = [n for n in ast.parse(template).body if isinstance(n, ast.FunctionDef)]
        if wanted:
            params = [a.arg for a in wanted[0].args.posonlyargs + wanted[0].args.args]
            if not _accepts(node, len(params)):
                raise ProgramError(f"{source}: {node.name}() must take the arguments ({', '.join(params)})")
    return node.name


def compile_priority(code: str, name: str | None = "priority", *, source: str = "<program>") -> Callable:
    """Execute ``code`` and return its function ``name``: runs the program's module code, so
    call it only inside a sandboxed worker (``check_program`` checks a program without running it).

    With ``name=None`` the program must define exactly one top-level function, or one
    called ``priority``.
    """
    names = function_names(code)
    if name is None:
        if "priority" in names:
            name = "priority"
        elif len(names) == 1:
            name = names[0]
        else:
            found = ", ".join(names) or "none"
            raise ProgramError(f"{source}: expected one function or one named 'priority' (found: {found})")
    elif name not in names:
        raise ProgramError(f"{source}: no top-level function named {name!r}")
    namespace: dict = {"__name__": "raise_heuristic"}
    try:
        exec(compile(code, source, "exec"), namespace)
    except Exception as exc:
        raise ProgramError(f"{source}: running the module raised {type(exc).__name__}: {exc}") from None
    func = namespace.get(name)
    if not callable(func):
        raise ProgramError(f"{source}: {name!r} is not callable")
    return func


def load_priority(path: str | Path, name: str | None = None) -> Callable:
    """The heuristic defined in the Python file at ``path`` (runs its module code: inside a
    sandboxed worker only; ``read_program`` and ``check_program`` read and check it)."""
    p = Path(path)
    try:
        code = p.read_text()
    except OSError as exc:
        raise ProgramError(f"cannot read heuristic file {p}: {exc.strerror or exc}") from None
    return compile_priority(code, name, source=str(p))


# Host logs store the function alone, without the template's imports.
_HOST_PREFACE = "import math\nimport numpy as np\n\n"


def read_program(source: str | Path) -> tuple[str, str]:
    """``(name, code)`` of a heuristic from a ``.py`` file, a plugin run directory
    (its best program) or an llm4ad log directory (its best sample)."""
    p = Path(source)
    if p.is_dir():
        summary = p / "summary.json"
        host_best = p / "samples" / "samples_best.json"
        if summary.is_file():
            data = _read_json(summary)
            best = data.get("best") or {}
            code = best.get("code") or best.get("program")
            if not code:
                raise ProgramError(f"{summary}: no best program recorded yet")
            return p.name, code
        if host_best.is_file():
            entries = _read_json(host_best)
            if not entries:
                raise ProgramError(f"{host_best}: no samples recorded")
            return p.name, _HOST_PREFACE + entries[-1]["function"]
        if (p / "config.json").is_file():  # a run stopped before its first summary: "neither a run directory" it said
            raise ProgramError(f"{p}: a run directory with no summary.json yet (stopped before it wrote one); "
                               f"raise-ahd resume {p} goes on to its best program")
        raise ProgramError(f"{p}: neither a run directory (summary.json) nor an llm4ad log (samples/samples_best.json)")
    try:
        return p.stem, p.read_text()
    except OSError as exc:
        raise ProgramError(f"cannot read heuristic file {p}: {exc.strerror or exc}") from None


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ProgramError(f"cannot read {path}: {exc}") from None
