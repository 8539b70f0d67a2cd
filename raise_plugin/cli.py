"""``raise-ahd``: parses the command line and hands over to one command module.

Each module in ``raise_plugin.commands`` exposes ``register(subparsers)``, which adds
its sub-command and sets ``func(args) -> int``. Errors the user can fix arrive as
``UserError`` and are printed as one line with exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import sys
import warnings

from . import host_missing

COMMANDS = ("tasks", "methods", "evaluate", "run", "resume", "compare", "demo", "profile", "rerank", "select")


class _Parser(argparse.ArgumentParser):
    """Usage mistakes in one line (argparse's usage block stays behind ``--help``), pointing at the help
    of the command typed (``command``): words it does not take are found by the parser of them all."""

    command: str | None = None

    def error(self, message):
        helps = f"{self.prog} {self.command}" if self.command and message.startswith("unrecognized") else self.prog
        self.exit(2, f"{self.prog}: error: {message} (see {helps} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone: a command's module imports what it
    runs on (scipy, the LLM back-ends, the harness), so loading only the one typed starts it,
    and lets it write its first record, seconds sooner."""
    parser = _Parser(prog="raise-ahd", description="Robust LLM-driven heuristic design (RAISE) for LLM4AD.")
    parser.command = command if command in COMMANDS else None
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in (command,) if command in COMMANDS else COMMANDS:
        importlib.import_module(f"raise_plugin.commands.{name}").register(sub)
    return parser


# flags renamed to their setting's one name (raise_plugin.settings): still understood, with a warning
RENAMED = {
    "compare": {"--robust-eps": "--epsilons"},
    "demo": {"--robust-eps": "--epsilons"},
    "profile": {"--eps": "--epsilons", "--seeds": "--adversary-seeds", "--population": "--inner-population",
                "--generations": "--inner-generations"},
}


def renamed(typed: list[str]) -> list[str]:
    """``typed`` with each renamed flag spelled the new way (a warning names each), and
    ``--early-reject on|off`` as the switch ``--early-reject``/``--no-early-reject``."""
    table = RENAMED.get(typed[0], {}) if typed else {}
    out: list[str] = []
    words = iter(typed)
    for word in words:
        flag, eq, value = word.partition("=")
        if flag in table:
            print(f"raise-ahd: warning: {flag} is now {table[flag]}", file=sys.stderr)
            word = table[flag] + eq + value
        elif flag == "--early-reject" and typed[0] == "run":  # the one command with the switch
            value = value if eq else next(words, "")
            if value not in ("on", "off"):
                out.append(flag)
                if value:
                    out.append(value)
                continue
            print(f"raise-ahd: warning: --early-reject {value} is now {'--early-reject' if value == 'on' else '--no-early-reject'}",
                  file=sys.stderr)
            word = "--early-reject" if value == "on" else "--no-early-reject"
        out.append(word)
    return out


def main(argv: list[str] | None = None) -> int:
    missing = host_missing()
    if missing:  # every command, and the errors module, imports the host: one line, not an import's traceback
        print(f"raise-ahd: error: {missing}", file=sys.stderr)
        return 2
    errors = importlib.import_module("raise_plugin.errors")  # as the commands are: once the host is known there
    typed = renamed(sys.argv[1:] if argv is None else list(argv))
    parser = build_parser(typed[0] if typed else None)
    try:
        args = parser.parse_args(typed)
    except SystemExit as exc:  # a usage error (one line, status 2) or --help (0)
        return exc.code if isinstance(exc.code, int) else 2
    # the long options typed, by destination (a preset fills in only the others)
    args.given = {t[2:].split("=", 1)[0].replace("-", "_") for t in typed if t.startswith("--")}
    previous = signal.signal(signal.SIGTERM, _terminated)  # as Ctrl-C: every command cleans up after itself
    shown = warnings.showwarning
    warnings.showwarning = errors.one_line_warning
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that went away (`| head`) is met here, not in Python's last flush
        return code
    except BrokenPipeError as exc:
        if not _reader_gone():  # a pipe of the command's own: said as any other failure of a file
            print(f"raise-ahd: error: {exc.strerror or exc}", file=sys.stderr)
            return 1
        # the reader of the output went away: nothing went wrong here, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is left goes nowhere, unsaid
        return 128 + signal.SIGPIPE
    except Terminated:
        print("raise-ahd: stopped by SIGTERM", file=sys.stderr)
        return 128 + signal.SIGTERM
    except errors.UserError as exc:
        print(f"raise-ahd: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # files and folders the user named
        print(f"raise-ahd: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("raise-ahd: interrupted", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        warnings.showwarning = shown


def _reader_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (``| head`` having read its lines)."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLERR)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll, or no file behind sys.stdout
        return False


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be."""


def _terminated(signum, frame):
    raise Terminated


if __name__ == "__main__":
    sys.exit(main())
