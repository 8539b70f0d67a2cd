"""The command line's flags, made from the tree of settings (``raise_plugin.settings``): each
flag named after its setting, with its help text, shown default and unit, in a group named after
its section; and the one-line error of a bad value, naming its flag."""
from __future__ import annotations

import argparse
from typing import Any, Iterable

from raise_plugin.errors import UserError
from raise_plugin.settings import SECTIONS, SETTINGS, Setting, SettingError, check_settings, section_of

__all__ = ["add_flags", "check_flags", "in_flag_words", "SEARCH_TIMEOUT_HELP"]

# --timeout of a command whose adversary searches (profile, rerank): the setting's help, and what a search may take
SEARCH_TIMEOUT_HELP = f"{SETTINGS['timeout'].help}; a search may take that times the instances it evaluates"


def check_flags(args, names: Iterable[str]) -> None:
    """A command's parsed flags ``names`` against their settings: the first bad one is a
    one-line ``UserError`` naming its flag."""
    try:
        check_settings({name: getattr(args, name) for name in names})
    except SettingError as exc:
        raise UserError(f"{SETTINGS[exc.name].flag}: {exc.reason}") from None


def in_flag_words(exc: UserError, names: Iterable[str]) -> UserError:
    """An error of the Python API that names its setting (``name: why``) as the command line names it
    (``--name: why``), where ``name`` is one of ``names``; any other unchanged."""
    name, colon, rest = str(exc).partition(":")
    return UserError(f"{SETTINGS[name].flag}{colon}{rest}" if name in names else str(exc))


def _parse_list(setting: Setting):
    def parse(text: str):
        items = [item.strip() for item in str(text).split(",") if item.strip()]
        if setting.name == "epsilons":
            try:
                return tuple(float(item) for item in items)
            except ValueError:
                raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
        return tuple(items)
    return parse


def add_flags(parser, names: Iterable[str], *, defaults: dict | None = None, unset: bool = False,
              groups: dict | None = None, required: Iterable[str] = (), helps: dict | None = None,
              shown: dict | None = None, metavars: dict | None = None, choices: dict | None = None) -> None:
    """Add the flags of settings ``names`` to ``parser`` in groups named after their sections, each
    with its help text and shown default. ``defaults`` replaces a setting's default for this command
    (``Setting.default`` otherwise); ``unset=True`` gives every flag the default ``None`` (a config
    file fills the rest in), the help still showing the default. Switches are ``--x/--no-x``.
    ``required`` names the flags this command cannot do without; ``helps`` says what a setting
    means to this command where the tree's words are too general (``out``: a file or a folder),
    ``shown`` its default in words, ``metavars`` the placeholder its help shows (``FILE``) and
    ``choices`` the values of a setting this command takes, where it takes fewer than the tree's."""
    defaults = defaults or {}
    helps = helps or {}
    required = set(required)
    groups = {} if groups is None else groups
    for name in names:
        setting = SETTINGS[name]
        section = SECTIONS[section_of(name)[-1]]
        if section.name not in groups:
            groups[section.name] = parser.add_argument_group(section.title)
        group = groups[section.name]
        value = defaults.get(name, setting.default)
        shown_default = (setting.shown_default() if name not in defaults
                         else Setting(name, value, setting.kind, "", unit=setting.unit).shown_default())
        shown_here = (shown or {}).get(name, shown_default)
        help_text = helps.get(name, setting.help) + ("" if name in required else f" (default {shown_here})")
        options: dict[str, Any] = {"dest": name, "default": None if unset else value, "help": help_text}
        if name in required:
            options["required"] = True
        if setting.kind == "bool":
            options["action"] = argparse.BooleanOptionalAction
        else:
            options["type"] = {"int": int, "float": float, "str": str, "list": _parse_list(setting)}.get(
                setting.kind, str)
            allowed = (choices or {}).get(name, setting.choices)
            if allowed and setting.kind == "list":  # each item of the list is checked against them (check_flags)
                options["help"] = help_text.replace(" (default", f", each one of {', '.join(allowed)} (default", 1)
            elif allowed:
                options["choices"] = allowed
            options["metavar"] = (metavars or {}).get(name) or setting.metavar or (
                "{" + ",".join(allowed) + "}" if allowed else
                {"int": "N", "float": "X", "list": "A,B,..."}.get(setting.kind, name.upper()))
        group.add_argument(setting.flag, **options)
