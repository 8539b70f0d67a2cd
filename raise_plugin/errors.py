"""Errors a user can fix (bad flags, files, configs): shown as one line, never a traceback.

``UserError`` is defined with the tasks (the lowest layer), so a task's own errors are ones too."""
import difflib
import sys
import warnings

from tasks.common.errors import BadArgument, BadArgumentType, UnknownName, UserError

__all__ = ["UserError", "UnknownName", "BadArgument", "BadArgumentType", "UnknownKeyword", "PluginWarning",
           "SandboxNote", "note_once", "one_line_warning", "unexpected_keyword"]


class PluginWarning(UserWarning):
    """Something a user should know before a run spends its budget (the command line shows it as
    one ``raise-ahd: warning:`` line)."""


class SandboxNote(PluginWarning):
    """What the sandbox cannot hold here (a user the machine does not let it become, a task whose
    nominal set a program can rebuild), with the fix: said once, as one ``raise-ahd: note:`` line,
    since nothing about the command itself is wrong."""


_NOTED: set[str] = set()  # the notes this process has said


def note_once(message: str, stacklevel: int = 2) -> None:
    """``message`` as a ``SandboxNote``, once in a process: not again at every run, which starts
    under warnings filters of its own (and Python's own once-per-place record is reset there)."""
    if message not in _NOTED:
        _NOTED.add(message)
        warnings.warn(message, SandboxNote, stacklevel=stacklevel + 1)


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` of the command line (and of its job processes): the plugin's warnings
    as one line each (``raise-ahd: warning: ...``, ``raise-ahd: note: ...``); others as Python shows them."""
    if issubclass(category, SandboxNote):
        print(f"raise-ahd: note: {message}", file=sys.stderr)
    elif issubclass(category, PluginWarning):
        print(f"raise-ahd: warning: {message}", file=sys.stderr)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


class UnknownKeyword(UserError, TypeError):
    """A keyword a config does not take: a ``UserError`` (one line, as an unknown field of a TOML
    file is), and a ``TypeError``, as Python's own for an unexpected keyword."""


def unexpected_keyword(owner: str, name: str, known) -> UnknownKeyword:
    """The one-line error of a keyword ``owner`` does not take, with the known names closest to it
    (``eps`` -> ``epsilon``)."""
    known = sorted(known)
    close = ([k for k in known if len(name) >= 3 and k.startswith(name)][:2]  # pop -> pop_size
             or difflib.get_close_matches(name, known, n=2))
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    return UnknownKeyword(f"{owner}: unknown field {name!r}{hint}")
