"""The paper's table layouts: means over instances then seeds with their interval, best bold, second
underlined, significant differences to the best baseline and the plain twin marked."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from raise_plugin.harness.paper_tables import build_table, family_columns, param_columns, size_columns
from raise_plugin.harness.significance import (best_baseline, significance, significance_markdown,
                                               significance_summary)


def rows_for(method, seed, values):
    """values: {(family, n, C): [metrics...]}"""
    out = []
    for (family, n, c), metrics in values.items():
        for i, m in enumerate(metrics):
            out.append({"method": method, "seed": seed, "family": family, "params": f"n={n};C={c}",
                        "instance": i, "metric": m, "valid": True})
    return out


def test_means_spread_and_marks():
    rows = (rows_for("A", 0, {("uniform", 5000, 200): [1.0, 3.0], ("normal", 5000, 200): [2.0, 2.0]})
            + rows_for("A", 1, {("uniform", 5000, 200): [3.0, 3.0], ("normal", 5000, 200): [4.0, 4.0]})
            + rows_for("B", 0, {("uniform", 5000, 200): [1.0, 1.0], ("normal", 5000, 200): [5.0, 5.0]})
            + rows_for("C", 0, {("uniform", 5000, 200): [9.0, 9.0], ("normal", 5000, 200): [0.5, 0.5]})
            + rows_for("C", 0, {("uniform", 1000, 200): [0.0, 0.0]}))  # another size: not in Table 1
    t = build_table(rows, family_columns(["uniform", "normal"], n=5000, C=200), title="t")
    assert t.columns == ["Uniform", "Normal", "Avg."]
    a = t.methods.index("A")
    assert t.mean[a, 0] == 2.5 and t.std[a, 0] == 0.5 and t.seeds[a, 0] == 2  # seeds: 2.0 and 3.0
    assert t.mean[a, 2] == np.mean([2.0, 3.5])                               # Avg. per seed, then over seeds
    # the half-width of the 95 % t interval over two seeds: t(0.975, 1) * s / sqrt(2), s = 0.5 * sqrt(2)
    assert t.half[a, 0] == pytest.approx(12.7062047 * 0.5)
    ranks = t.ranks()
    assert list(ranks[:, 0]) == [1, 0, 2]     # Uniform: B best, A second
    assert list(ranks[:, 1]) == [1, 2, 0]     # Normal: C best, A second
    md = t.markdown()
    assert "**1.000**" in md and "<u>2.500 ± 6.353</u>" in md and "Student-t" in md


def test_ties_share_a_mark_and_invalid_instances_are_flagged():
    rows = rows_for("A", 0, {("uniform", 1, 1): [1.0]}) + rows_for("B", 0, {("uniform", 1, 1): [1.0]})
    rows += rows_for("C", 0, {("uniform", 1, 1): [2.0]})
    rows.append({"method": "C", "seed": 0, "family": "uniform", "params": "n=1;C=1", "instance": 1,
                 "metric": "nan", "valid": "False"})
    t = build_table(rows, family_columns(["uniform"]), title="t", average=False)
    assert list(t.ranks()[:, 0]) == [0, 0, 1]
    assert t.invalid[2, 0] == 1 and "2.000 §" in t.markdown() and "§ some instances invalid" in t.markdown()


def test_size_and_parameter_columns():
    rows = rows_for("A", 0, {("uniform", 1000, 100): [1.0], ("normal", 1000, 100): [3.0],
                             ("uniform", 5000, 100): [5.0]})
    t = build_table(rows, size_columns(("C", "n"), [(100, 1000), (100, 5000)]), title="t", average=False)
    assert t.columns == ["C=100, n=1000", "C=100, n=5000"] and list(t.mean[0]) == [2.0, 5.0]
    jsp = [{"method": "A", "seed": 0, "family": "uniform", "params": "M=10;J=20", "metric": 1.5, "valid": True},
           {"method": "A", "seed": 0, "family": "normal", "params": "M=20;J=20", "metric": 2.5, "valid": True}]
    t = build_table(jsp, param_columns("M", [10, 20], lambda m: f"{m}-machine"), title="t", average=False)
    assert t.columns == ["10-machine", "20-machine"] and list(t.mean[0]) == [1.5, 2.5]
    empty = build_table(jsp, param_columns("M", [30]), title="t", average=False)
    assert math.isnan(empty.mean[0, 0]) and "—" in empty.markdown()


def seeded(method, seeds, shift, noise=0.001):
    """Five uniform instances per seed around a common profile, moved by ``shift``, with some noise."""
    rng = np.random.default_rng(7)
    base = rng.uniform(1.0, 2.0, size=5)
    out = []
    for s in seeds:
        jitter = np.random.default_rng([s, sum(map(ord, method))]).normal(0, noise, size=5)
        out += rows_for(method, s, {("uniform", 1, 1): list(base + shift + jitter)})
    return out


def test_significant_cells_are_marked_with_their_direction():
    rows = (seeded("Base", [0], 0.0, noise=0) + seeded("Other", [0], 0.5) + seeded("Plain", range(5), -0.1)
            + seeded("Robust", range(5), 0.05) + seeded("Level", range(5), 0.0, noise=0.2))
    t = build_table(rows, family_columns(["uniform"]), title="t", average=False, baselines=["Base", "Other"],
                    twins={"Robust": "Plain"})
    cell = {m: t.cell(i, 0) for i, m in enumerate(t.methods)}
    assert cell["Plain"].endswith("†+")               # better than the best baseline
    assert cell["Robust"].endswith("†− ‡−")           # worse than both
    assert "†" not in cell["Base"] and "‡" not in cell["Plain"]
    level = t.tests[(t.methods.index("Level"), 0, "baseline")]
    assert level.reference == "Base" and not level.significant and "†" not in cell["Level"]
    assert "† / ‡" in t.markdown()


def test_significance_in_words_says_what_is_not_established():
    rows = seeded("Base", [0], 0.0) + seeded("Plain", range(3), -0.1) + seeded("Robust", range(3), -0.1)
    comparisons = significance(rows, ["Plain", "Robust"], ["Base"], {"Robust": "Plain"})
    assert [(c.method, c.relation) for c in comparisons] == [
        ("Plain", "best baseline"), ("Robust", "best baseline"), ("Robust", "plain twin")]
    words = significance_summary(comparisons, seeds=3)
    assert "better, significant" in words[0] and "not significant" in words[2]
    assert all("whole test suite" in w for w in words[:3])
    assert words[-1].startswith("Only 3 seeds") and "not significant" not in words[0]
    assert "significant only when both agree" in words[2] or "neither the Wilcoxon test" in words[2]
    one = significance_summary(significance(seeded("Base", [0], 0) + seeded("A", [0], -0.1), ["A"], ["Base"]), 1)
    assert "One seed" in one[-1]
    table = significance_markdown(comparisons, "t")
    assert "| Robust | Plain (plain twin) |" in table and "better, significant" in table


def test_the_sentence_names_the_slices_the_table_marks_when_the_whole_suite_is_not_significant():
    rng = np.random.default_rng(0)
    rows = rows_for("Base", 0, {("uniform", 50, 100): [5.0] * 30, ("normal", 50, 100): [5.0] * 30})
    for seed in range(5):  # much better on uniform on every seed, worse on normal: no difference over the suite
        rows += rows_for("A", seed, {("uniform", 50, 100): list(4.0 + 0.1 * rng.random(30)),
                                     ("normal", 50, 100): list(6.0 - 0.1 * rng.random(30))})
    table = build_table(rows, family_columns(["uniform", "normal"], n=50, C=100), title="t",
                        baselines=["Base"], methods=["Base", "A"])
    assert table.marked() == {("A", "baseline"): ["Uniform (better)", "Normal (worse)"]}
    comparisons = significance(rows, ["A"], ["Base"])
    assert not comparisons[0].significant
    sentence = significance_summary(comparisons, 5, table=table)[0]
    assert sentence.startswith("A vs Base (best baseline), whole test suite: not significant")
    assert sentence.endswith("significant on Uniform (better), Normal (worse).")
    assert "†+" in table.cell(1, 0) and "†−" in table.cell(1, 1)


def test_the_rule_chosen_on_validation_is_the_reference_even_where_another_does_better_on_test():
    rows = seeded("Base", [0], 0.0, noise=0) + seeded("Chosen", [0], 0.3, noise=0) + seeded("Robust", range(5), 0.1)
    assert best_baseline(rows, ["Base", "Chosen"]) == "Base"
    assert best_baseline(rows, ["Base", "Chosen"], chosen="Chosen") == "Chosen"
    assert best_baseline(rows, ["Base", "Chosen"], chosen="Absent") == "Base"  # no results: the lowest
    t = build_table(rows, family_columns(["uniform"]), title="t", average=False, baselines=["Base", "Chosen"],
                    reference="Chosen")
    assert t.tests[(t.methods.index("Robust"), 0, "baseline")].reference == "Chosen"
    compared = significance(rows, ["Robust"], ["Base", "Chosen"], chosen="Chosen")
    assert [c.reference for c in compared] == ["Chosen"]


def test_a_bar_in_a_name_stays_in_its_cell_and_a_cell_of_invalid_instances_is_marked():
    # "Best|Fit" split its row into one cell too many (in report.md and report.html alike); a cell whose
    # instances were all invalid showed a bare "—", unmarked
    rows = rows_for("Best|Fit", 0, {("uniform", 1, 1): [1.0]}) + rows_for("A", 0, {("uniform", 1, 1): [2.0]})
    rows.append({"method": "C", "seed": 0, "family": "uniform", "params": "n=1;C=1", "instance": 0,
                 "metric": "nan", "valid": "False"})
    table = build_table(rows, family_columns(["uniform"]), title="t", average=False, baselines=["Best|Fit"])
    lines = [line for line in table.markdown().splitlines() if line.startswith("| ")]
    assert all(len(re.split(r"(?<!\\)\|", line)) == 4 for line in lines), lines
    assert "| Best\\|Fit | **1.000** |" in lines and "| C | — § |" in lines
    compared = significance(rows, ["A"], ["Best|Fit"])
    text = significance_markdown(compared, "t")
    assert "| A | Best\\|Fit (best baseline) |" in text


def test_a_significance_table_with_no_comparison_says_so_instead_of_a_bare_header():
    text = significance_markdown([], "ovrp: each method against ...")
    assert "| Method |" not in text and text.endswith("(a failed job's cells are left out; report.md lists the "
                                                      "failed jobs and why).")
