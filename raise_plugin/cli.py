"""``raise-ahd``: parses the command line and hands over to one command module.

Each module in ``raise_plugin.commands`` exposes ``register(subparsers)``, which adds
its sub-command and sets ``func(args) -> int``. Errors the user can fix arrive as
``UserError`` and are printed as one line with exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import UserError

COMMANDS = ("tasks", "methods", "evaluate", "run", "resume", "compare", "demo", "profile", "rerank", "select")


class _Parser(argparse.ArgumentParser):
    """Usage mistakes in one line (argparse's usage block stays behind ``--help``)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="raise-ahd", description="Robust LLM-driven heuristic design (RAISE) for LLM4AD.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"raise_plugin.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # the long options typed, by destination (a preset fills in only the others)
    typed = sys.argv[1:] if argv is None else argv
    args.given = {t[2:].split("=", 1)[0].replace("-", "_") for t in typed if t.startswith("--")}
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"raise-ahd: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # files and folders the user named
        print(f"raise-ahd: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("raise-ahd: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
