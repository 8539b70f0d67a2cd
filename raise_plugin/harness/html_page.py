"""One self-contained HTML page: inline CSS, figures embedded as data: images, no script and nothing
fetched, so it opens from disk in any browser. Every text is escaped (``html.escape``); the little
Markdown the harness writes in its sentences (``**bold**``, ``<u>underlined</u>``, `` `code` ``,
``[text](file)``) is turned into tags only after escaping."""
from __future__ import annotations

import base64
import html
import math
import re
from pathlib import Path

__all__ = ["STYLE", "escape", "inline", "page", "section", "table", "figure", "preformatted", "number",
           "markdown_html"]

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1a1a1a;
       background: #ffffff; max-width: 1240px; margin: 1.5em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.5em; border-bottom: 2px solid #0072B2; padding-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.0em; margin-top: 1.2em; }
p.note { background: #fff4e5; border-left: 4px solid #D55E00; padding: 0.5em 0.8em; }
section.failures { background: #fdecea; border-left: 4px solid #b00020; padding: 0.2em 0.9em 0.6em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.88em; display: block; max-width: 100%;
        overflow-x: auto; }
td a { overflow-wrap: anywhere; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.45em; vertical-align: top; }
th { background: #eef3f8; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafafa; }
p.caption, p.footnote { font-size: 0.85em; color: #444; max-width: 75em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e0e0e0; }
figcaption { font-size: 0.85em; color: #444; }
pre { background: #f6f8fa; border: 1px solid #e0e0e0; padding: 0.7em; overflow-x: auto; font-size: 0.85em; }
code { background: #f3f3f3; padding: 0 0.2em; }
ul.verdicts li { margin-bottom: 0.4em; }
"""

_IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml"}


def escape(text) -> str:
    """``text`` (anything) as HTML text, quotes included."""
    return html.escape(str(text), quote=True)


def inline(markdown) -> str:
    """One of the harness's Markdown sentences as HTML: escaped first, then its bold, underlined, code
    and link marks made tags (a link keeps its relative target, a file beside the page)."""
    text = escape(markdown)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"&lt;u&gt;(.+?)&lt;/u&gt;", r"<u>\1</u>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s:]+)\)", r'<a href="\2">\1</a>', text)


def page(title: str, body: list[str]) -> str:
    """The whole document: ``title`` escaped, ``body`` (HTML already built) as given."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
                      f"<h1>{escape(title)}</h1>", *body, "</body>", "</html>"]) + "\n"


def section(title: str, body: list[str], css_class: str = "", anchor: str = "") -> str:
    """A ``<section>`` headed by ``title`` (escaped)."""
    attributes = (f' class="{escape(css_class)}"' if css_class else "") + (f' id="{escape(anchor)}"' if anchor else "")
    return "\n".join([f"<section{attributes}>", f"<h2>{escape(title)}</h2>", *body, "</section>"])


def table(header: list[str], rows: list[list], *, numeric: set[int] = frozenset(), markdown: bool = False,
          caption: str = "") -> str:
    """A table of ``rows`` under ``header``; columns in ``numeric`` right-aligned. Cells are escaped, or
    read as the harness's Markdown (``inline``) with ``markdown``; a cell given as ``("html", text)`` is
    taken as built."""
    def cell(value, j: int, tag: str) -> str:
        if isinstance(value, tuple) and value and value[0] == "html":
            content = value[1]
        else:
            content = inline(value) if markdown else escape("" if value is None else value)
        css = ' class="num"' if j in numeric and tag == "td" else ""
        return f"<{tag}{css}>{content}</{tag}>"
    lines = ["<table>"]
    if caption:
        lines.append(f"<caption>{inline(caption)}</caption>")
    lines.append("<thead><tr>" + "".join(cell(h, j, "th") for j, h in enumerate(header)) + "</tr></thead>")
    lines.append("<tbody>")
    lines += ["<tr>" + "".join(cell(v, j, "td") for j, v in enumerate(row)) + "</tr>" for row in rows]
    return "\n".join(lines + ["</tbody>", "</table>"])


def figure(path: Path, caption: str = "", *, data: bytes | None = None) -> str:
    """``path`` (a PNG or SVG; or ``data``, its bytes, when given) embedded as a data: image, with
    ``caption`` (escaped) and its file name."""
    path = Path(path)
    encoded = base64.b64encode(path.read_bytes() if data is None else data).decode("ascii")
    alt = escape(caption or path.stem)
    return (f'<figure><img alt="{alt}" src="data:{_IMAGE_TYPES[path.suffix.lower()]};base64,{encoded}">'
            f"<figcaption>{escape(caption + ' ' if caption else '')}({escape(path.name)})</figcaption></figure>")


def preformatted(text) -> str:
    """``text`` as it is (a program), escaped, in a ``<pre>``."""
    return f"<pre>{escape(text)}</pre>"


def number(x, digits: int = 4) -> str:
    """A number as a table shows it: integers whole, floats to ``digits`` significant digits, missing blank."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, bool) or isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def markdown_html(text: str, folder: Path, special: dict[str, str] | None = None) -> list[str]:
    """The harness's own Markdown (``report.md``) as HTML, every word kept: ``## `` headings open
    sections (``special`` gives some a CSS class: ``{"Failed jobs": "failures"}``), pipe tables become
    tables (right-aligned where the Markdown says ``---:``), ``- `` items a list, ``> `` a note, and an
    image line ``![name](file)`` the figure embedded from ``folder`` (a PNG or SVG; a PDF beside an
    embedded figure of the same name is named under it, a PDF alone linked), the lines after it in its
    paragraph a caption."""
    body, open_section, embedded = [], False, set()
    blocks = [b.splitlines() for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    for lines in blocks:
        first = lines[0]
        if first.startswith("# "):
            continue  # the page's title
        if first.startswith("## "):
            if open_section:
                body.append("</section>")
            name = first[3:].strip()
            css = (special or {}).get(name, "")
            attribute = f' class="{escape(css)}"' if css else ""
            body += [f"<section{attribute}>", f"<h2>{inline(name)}</h2>"]
            open_section = True
            lines = lines[1:]
            if not lines:
                continue
            first = lines[0]
        if all(line.startswith("|") for line in lines) and len(lines) >= 2:
            body.append(_pipe_table(lines))
        elif first.startswith("- "):
            items = []
            for line in lines:
                if line.startswith("- "):
                    items.append(line[2:])
                else:
                    items[-1] += " " + line.strip()
            body.append('<ul class="verdicts">' + "".join(f"<li>{inline(i)}</li>" for i in items) + "</ul>")
        elif first.startswith("> "):
            body.append(f'<p class="note">{inline(" ".join(line.removeprefix("> ") for line in lines))}</p>')
        elif re.fullmatch(r"!\[[^\]]*\]\([^)]+\)", first):  # a figure, and what follows it (its other formats)
            body.append(_image(first, folder, embedded))
            if lines[1:]:
                body.append(f'<p class="caption">{inline(" ".join(lines[1:]))}</p>')
        elif len(lines) == 1 and re.fullmatch(r"\*\*[^*]+\*\*", first):
            body.append(f"<h3>{escape(first[2:-2])}</h3>")  # a table's title
        else:
            body.append(f"<p>{inline(' '.join(lines))}</p>")
    return [b for b in body if b] + (["</section>"] if open_section else [])


def _pipe_table(lines: list[str]) -> str:
    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
    header, rule, rows = cells(lines[0]), cells(lines[1]), [cells(line) for line in lines[2:]]
    numeric = {j for j, r in enumerate(rule) if r.endswith(":")}
    return table(header, rows, numeric=numeric, markdown=True)


def _image(line: str, folder: Path, embedded: set) -> str:
    name, target = re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line).groups()
    path = Path(folder) / Path(target).name
    if path.suffix.lower() in _IMAGE_TYPES and path.is_file() and path.stem not in embedded:
        embedded.add(path.stem)
        return figure(path, name)
    if path.stem in embedded:
        return f'<p class="caption">{escape(name)} also as <a href="{escape(path.name)}">{escape(path.name)}</a></p>'
    return f'<p>{escape(name)}: <a href="{escape(path.name)}">{escape(path.name)}</a> (not embedded)</p>'
