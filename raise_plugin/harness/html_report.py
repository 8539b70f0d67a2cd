"""Compare's ``report.html``: ``report.md`` as one self-contained page, every word the same, its tables
as tables and its figures embedded (``html_page``), so a reviewer opens one file from disk."""
from __future__ import annotations

from pathlib import Path

from raise_plugin.harness.html_page import markdown_html, page

__all__ = ["compare_page", "write_compare_page"]


def compare_page(report_markdown: str, out: Path) -> str:
    """The page of a compare whose ``report.md`` reads ``report_markdown`` and whose files are in ``out``."""
    first = report_markdown.lstrip().splitlines()[0] if report_markdown.strip() else "RAISE compare"
    return page(first.removeprefix("# "), markdown_html(report_markdown, out, special={"Failed jobs": "failures"}))


def write_compare_page(out: Path) -> Path:
    """``OUT/report.html`` from ``OUT/report.md`` and the figures beside it; returns its path."""
    out = Path(out)
    path = out / "report.html"
    path.write_text(compare_page((out / "report.md").read_text(), out))
    return path
