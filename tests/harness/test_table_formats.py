"""Every table as LaTeX: what a name or a caption holds is escaped so that the table compiles and reads
as written under LaTeX's default font encoding, and the caption says what the interval resamples."""
from __future__ import annotations

import re

from raise_plugin.harness.paper_tables import build_table, family_columns
from raise_plugin.harness.significance import significance, significance_markdown
from raise_plugin.harness.table_formats import significance_latex, table_latex


def rows_for(method, seed, metrics):
    return [{"method": method, "seed": seed, "family": "uniform", "params": "n=1;C=1", "instance": i,
             "metric": m, "valid": True} for i, m in enumerate(metrics)]


def outside_math(latex: str) -> str:
    return re.sub(r"\$[^$]*\$", "", latex.replace("\\$", ""))


def test_a_less_than_sign_a_bar_and_a_plus_minus_are_set_as_themselves():
    # "p < 0.05" in every caption and "p < 0.001" in a cell printed as "p ¡ 0.05" under OT1, a "|" in a
    # name as a dash, and the caption's ± was left raw
    rows = rows_for("Best|Fit <2>", 0, [1.0] * 8) + rows_for("A_1", 0, [2.0 + i for i in range(8)])
    rows += rows_for("A_1", 1, [2.5 + i for i in range(8)])
    table = build_table(rows, family_columns(["uniform"]), title="t", average=False, baselines=["Best|Fit <2>"],
                        twins={})
    latex = table_latex(table)
    tests = significance(rows, ["A_1"], ["Best|Fit <2>"])
    sig = significance_latex(tests, "50% of #1 & <more>")
    for text in (latex, sig):
        bare = outside_math(text)
        assert "<" not in bare and ">" not in bare and "±" not in bare, text
        assert "Best\\textbar{}Fit $<$2$>$" in text and "A\\_1" in text
    assert "p $<$ 0.05" in latex and "$\\pm$" in latex
    assert "50\\% of \\#1 \\& $<$more$>$" in sig


def test_the_significance_caption_says_the_interval_resamples_instances_with_one_seed():
    rows = rows_for("B", 0, [1.0] * 8) + rows_for("A", 0, [2.0 + i for i in range(8)])
    one_seed = significance_latex(significance(rows, ["A"], ["B"]), "t")
    assert "bootstrap interval over instances (one seed" in one_seed and "over seeds" not in one_seed
    rows += rows_for("A", 1, [2.5 + i for i in range(8)])
    assert "bootstrap interval over seeds;" in significance_latex(significance(rows, ["A"], ["B"]), "t")


def test_a_comparison_with_no_valid_pair_is_not_taken_for_one_seed():
    # every pair dropped: the bootstrap "resampled instances" of no pair, and both tables said one seed did
    rows = rows_for("B", 0, [1.0] * 3) + [dict(r, metric="nan", valid=False) for s in (0, 1)
                                          for r in rows_for("A", s, [1.0] * 3)]
    tests = significance(rows, ["A"], ["B"])
    assert tests[0].pairs == 0 and tests[0].verdict == "no valid pairs"
    assert "one seed" not in significance_latex(tests, "t")
    assert "With one seed" not in significance_markdown(tests, "t")
