"""The tree of settings as a reference page: docs/settings.md is ``markdown()``, written by
``python -m raise_plugin.settings_page > docs/settings.md`` (a test keeps it current)."""
from __future__ import annotations

from raise_plugin.settings import HARNESS, TREE, Setting

__all__ = ["markdown"]


def markdown() -> str:
    """The tree as a reference page (docs/settings.md is this, written by ``python -m raise_plugin.settings_page``)."""
    lines = ["# Settings", "",
             "Every setting of a run, a compare and the commands beside them, from the one tree in",
             "`raise_plugin/settings.py`. A setting has one name everywhere: the Python keyword and config",
             "field, the TOML key (at the top level of a `--config` file, or in the table of its section:",
             "`[adversary.inner_search]`), the key in a run directory's `config.json`, and the flag",
             "(`--inner-population`; a switch is `--x`/`--no-x`). \"The task's\" defaults are the task's own",
             "(`raise-ahd tasks --task NAME` shows them), chosen on its validation suite; the value after",
             "\"else\" is the paper's. In Python, a `RunConfig` holds a frozen config per section, named as",
             "the section (`config.adversary.inner_search.inner_population`), each field named as its setting",
             "but two: `config.budget.samples` is `budget` and `config.llm.backend` is `llm`; the keywords are",
             "the settings' names, flat (`RunConfig(budget=40, llm=\"offline\")`). This page is written from the",
             "tree (`python -m raise_plugin.settings_page > docs/settings.md`); a test keeps it current.", ""]
    for tree in (TREE, HARNESS):
        for names, section in tree.sections():
            rows = [child for child in section.children if isinstance(child, Setting)]
            if not rows:
                continue
            path = ".".join(p for p in names if p != "run") or "run"
            table = f" (`[{path}]` in a run's TOML file)" if tree is TREE else " (flags and Python keywords)"
            lines += [f"## {section.title}{table}", "", "| setting | flag | default | what it is |",
                      "|---|---|---|---|"]
            for s in rows:
                choices = f" {'Each' if s.kind == 'list' else 'One'} of: {', '.join(s.choices)}." if s.choices else ""
                text = f"{s.help}.{choices}".replace("|", "\\|")
                lines.append(f"| `{s.name}` | `{s.flag}` | {s.shown_default()} | {text} |")
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
