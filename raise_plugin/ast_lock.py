"""One ``ast.parse`` at a time on CPython 3.11.

CPython 3.11 builds the Python objects of a parsed tree with a recursion counter that every
thread shares (the ``ast`` module's state), and runs garbage collections in the middle of that
construction. When a collection runs Python code (a finalizer) another thread may take over and
parse too; the first parse then fails with ``SystemError: AST constructor recursion depth
mismatch``. The host's converter turns every error into ``None``, so the failure surfaces as a
sample the host calls malformed or a re-score that cannot read its program, once in thousands
of parses made side by side (the evaluation threads of a refresh, programs in flight, several
samplers). From 3.12 collections run only between bytecodes, and the failure does not occur.

On 3.11, importing the plugin makes ``ast.parse`` take one lock for the whole process; the host,
the plugin and anything else that calls ``ast.parse`` by its module attribute are covered. A
forked child starts with the lock free (workers forked with ``start_method="fork"``).
"""
from __future__ import annotations

import ast
import functools
import os
import sys
import threading

__all__ = ["guard_ast_parse"]

_LOCK = threading.RLock()


def _unlocked_in_child() -> None:
    """A process forked while another thread parsed would inherit the lock held for good."""
    global _LOCK
    _LOCK = threading.RLock()


os.register_at_fork(after_in_child=_unlocked_in_child)


def guard_ast_parse() -> None:
    """Serialise ``ast.parse`` where the interpreter needs it (3.11); once per process."""
    if sys.version_info >= (3, 12) or getattr(ast.parse, "__raise_locked__", False):
        return
    unlocked = ast.parse

    @functools.wraps(unlocked)
    def parse(*args, **kwargs):
        with _LOCK:
            return unlocked(*args, **kwargs)

    parse.__raise_locked__ = True
    ast.parse = parse
