"""Every table compare writes, as CSV (one value per column: mean, half-width, seeds, marks) and as
LaTeX (booktabs), beside its Markdown."""
from __future__ import annotations

import csv
import io
import math

from raise_plugin.harness.significance import NO_COMPARISON
from raise_plugin.harness.stats import format_p, format_signed

__all__ = ["table_csv", "table_latex", "significance_csv", "significance_latex"]


def table_csv(table) -> str:
    """One line per (method, column): the mean, the half-width of its 95 % t interval (empty from one
    seed), the seeds, the invalid instances, the marks and the Holm-adjusted p of each test."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["method", "column", "mean", "half_width", "seeds", "invalid", "marks", "p_vs_best_baseline",
                     "p_vs_plain_twin"])
    for i, method in enumerate(table.methods):
        for j, column in enumerate(table.columns):
            half = None if table.half is None else table.half[i, j]
            tests = [table.tests.get((i, j, r)) for r in ("baseline", "twin")]
            writer.writerow([method, column, _number(table.mean[i, j]), _number(half), int(table.seeds[i, j]),
                             int(table.invalid[i, j]), table.marks(i, j),
                             *("" if t is None else _number(t.p) for t in tests)])
    return buffer.getvalue()


def table_latex(table, digits: int = 3) -> str:
    """A booktabs ``table`` with the title and caption of the Markdown table; best of a column bold,
    second underlined."""
    ranks = table.ranks()
    lines = ["\\begin{table}[t]", "\\centering", "\\small",
             f"\\caption{{{_tex(table.title)}. {_tex(_plain(table.caption()))}}}",
             f"\\begin{{tabular}}{{l{'r' * len(table.columns)}}}", "\\toprule",
             "Method & " + " & ".join(_tex(c) for c in table.columns) + " \\\\", "\\midrule"]
    for i, method in enumerate(table.methods):
        cells = []
        for j in range(len(table.columns)):
            text = _tex(table.cell(i, j, digits))
            cells.append(f"\\textbf{{{text}}}" if ranks[i, j] == 0 else
                         f"\\underline{{{text}}}" if ranks[i, j] == 1 else text)
        lines.append(f"{_tex(method)} & " + " & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    notes = " ".join(_plain(n) for n in table.footnotes())
    if notes:
        lines.append(f"\\par\\smallskip\\footnotesize {_tex(notes)}")
    return "\n".join(lines + ["\\end{table}"]) + "\n"


def significance_csv(comparisons) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["method", "reference", "relation", "mean_difference", "ci_low", "ci_high", "p_holm", "p_raw",
                     "pairs", "dropped", "seeds", "verdict"])
    for c in comparisons:
        writer.writerow([c.method, c.reference, c.relation, _number(c.mean), _number(c.low), _number(c.high),
                         _number(c.p), _number(c.raw_p if c.raw_p is not None else c.p), c.pairs, c.dropped, c.seeds,
                         c.verdict])
    return buffer.getvalue()


def significance_latex(comparisons, title: str, digits: int = 3) -> str:
    if not comparisons:
        return "\n".join(["\\begin{table}[t]", "\\centering", "\\small", f"\\caption{{{_tex(title)}.}}",
                          _tex(NO_COMPARISON), "\\end{table}"]) + "\n"
    over = ("instances (one seed: it says nothing of seed-to-seed variation)"
            if any(c.over == "instances" and c.pairs for c in comparisons) else "seeds")  # as the Markdown table says
    lines = ["\\begin{table}[t]", "\\centering", "\\small", f"\\caption{{{_tex(title)}. Difference = method $-$ "
             f"reference (negative: the method is better); 95 \\% bootstrap interval over {over}; Wilcoxon "
             "signed-rank p, Holm-adjusted over the table's rows.}",
             "\\begin{tabular}{llrrrl}", "\\toprule",
             "Method & compared with & mean difference & 95 \\% CI & p (Holm) & verdict \\\\", "\\midrule"]
    for c in comparisons:
        interval = "---" if math.isnan(c.low) else f"[{format_signed(c.low, digits)}, {format_signed(c.high, digits)}]"
        lines.append(" & ".join(_tex(x) for x in (c.method, f"{c.reference} ({c.relation})",
                                                  format_signed(c.mean, digits), interval, format_p(c.p, c.alpha),
                                                  c.verdict)) + " \\\\")
    return "\n".join(lines + ["\\bottomrule", "\\end{tabular}", "\\end{table}"]) + "\n"


def _number(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


def _plain(markdown: str) -> str:
    return markdown.replace("**bold**", "bold").replace("<u>underlined</u>", "underlined").replace("**", "")


_TEX = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
        "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "−": "$-$", "†": "$^\\dagger$",
        "‡": "$^\\ddagger$", "§": "\\S{}", "≤": "$\\le$", "±": "$\\pm$",
        # LaTeX's default font encoding (OT1) sets these three as other glyphs (¡, ¿, —) in text
        "<": "$<$", ">": "$>$", "|": "\\textbar{}"}


def _tex(text: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(text))
