"""Turning program text (an LLM sample, a heuristic file) into a callable heuristic."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable

__all__ = ["ProgramError", "compile_priority", "load_priority", "function_names"]


class ProgramError(Exception):
    """The program text cannot give a heuristic; the message is a one-line reason."""


def function_names(code: str) -> list[str]:
    """Names of the top-level functions defined in ``code`` (``ProgramError`` on bad syntax)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ProgramError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def compile_priority(code: str, name: str | None = "priority", *, source: str = "<program>") -> Callable:
    """Execute ``code`` and return its function ``name``.

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
    """The heuristic defined in the Python file at ``path``."""
    p = Path(path)
    try:
        code = p.read_text()
    except OSError as exc:
        raise ProgramError(f"cannot read heuristic file {p}: {exc.strerror or exc}") from None
    return compile_priority(code, name, source=str(p))
