"""Paired statistics on synthetic results with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from raise_plugin.harness.stats import (Comparison, bootstrap_ci, compare_paired, mean_half_width, pair_rows,
                                        wilcoxon_p)


def results(method, seeds, values, valid=None):
    """Rows of ``method``: ``values[s][i]`` is the metric of seed ``seeds[s]`` on instance i."""
    out = []
    for s, seed in enumerate(seeds):
        for i, v in enumerate(values[s]):
            ok = True if valid is None else valid[s][i]
            out.append({"method": method, "seed": seed, "dataset": f"d{i % 3}", "instance": i // 3,
                        "metric": v if ok else "nan", "valid": ok})
    return out


def noisy(seed, shape, scale=1.0):
    return np.random.default_rng(seed).normal(1.0, scale, size=shape)


def test_identical_samples_give_p_one_and_an_interval_at_zero():
    base = noisy(0, (5, 12))
    rows = results("A", range(5), base) + results("B", range(5), base)
    c = compare_paired(rows, "A", "B", "plain twin", by_seed=True)
    assert c.p == 1.0 and c.low <= 0.0 <= c.high and c.mean == 0.0
    assert not c.significant and c.mark() == "" and c.verdict.startswith("no difference")


def test_a_constant_shift_is_significant_with_its_direction():
    base = noisy(1, (5, 12))
    better = results("A", range(5), base - 0.05) + results("B", range(5), base)
    c = compare_paired(better, "A", "B", by_seed=True)
    assert c.mean == pytest.approx(-0.05) and c.high < 0 and c.p < 0.05
    assert c.significant and c.verdict == "better, significant" and c.mark() == "+"
    worse = results("A", range(5), base + 0.05) + results("B", range(5), base)
    c = compare_paired(worse, "A", "B", by_seed=True)
    assert c.low > 0 and c.verdict == "worse, significant" and c.mark() == "−"


def test_noise_around_zero_is_not_significant():
    rows = results("A", range(5), noisy(2, (5, 12))) + results("B", range(5), noisy(3, (5, 12)))
    c = compare_paired(rows, "A", "B", by_seed=True)
    assert c.low < 0 < c.high and not c.significant and c.verdict == "no significant difference"


def test_the_interval_is_reproducible_under_the_fixed_seed():
    diff = noisy(4, (5, 10), scale=0.1) - 1.0
    assert bootstrap_ci(diff) == bootstrap_ci(diff)
    assert bootstrap_ci(diff, seed=1) != bootstrap_ci(diff, seed=2)


def test_the_interval_resamples_seeds_not_instances():
    # seed means -1 and +1: resampling seeds gives [-1, 1]; pooling the 2 x 50 pairs would give a
    # narrow interval around 0
    diff = np.array([[-1.0] * 50, [1.0] * 50])
    low, high, over = bootstrap_ci(diff)
    assert over == "seeds" and low == pytest.approx(-1.0) and high == pytest.approx(1.0)
    low, high, over = bootstrap_ci(np.array([[-1.0, 1.0] * 25]))
    assert over == "instances" and -0.5 < low < 0 < high < 0.5


def test_a_baseline_is_repeated_for_every_seed():
    method = results("M", [0, 1], [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]])
    baseline = results("B", [0], [[1.5, 1.5, 1.5]])
    paired = pair_rows(method + baseline, "M", "B")
    assert paired.seeds == ("0", "1")
    assert np.array_equal(paired.diff, [[-0.5, 0.5, 1.5], [0.5, 1.5, 2.5]])
    with pytest.raises(ValueError, match="pair it by seed"):
        pair_rows(method + results("N", [0, 1], [[1.0] * 3] * 2), "M", "N")


def test_invalid_pairs_are_dropped_and_counted():
    valid = [[True, False, True, True], [True, True, True, False]]
    rows = results("A", [0, 1], [[1.0, 2.0, 3.0, 4.0]] * 2, valid) + results("B", [0, 1], [[0.0] * 4] * 2)
    c = compare_paired(rows, "A", "B", by_seed=True)
    assert c.pairs == 6 and c.dropped == 2 and c.seeds == 2
    assert c.mean == pytest.approx((1 + 3 + 4 + 1 + 2 + 3) / 6)


def test_edge_cases():
    assert wilcoxon_p(np.zeros(7)) == 1.0
    assert math.isnan(wilcoxon_p(np.array([math.nan])))
    assert math.isnan(mean_half_width([1.0]))
    assert mean_half_width([1.0, 1.0, 1.0]) == 0.0
    empty = Comparison("A", "B", "", math.nan, math.nan, math.nan, math.nan, 0, 0, 0, "seeds")
    assert empty.verdict == "no valid pairs" and not empty.significant


def test_holm_adjusts_a_family_of_p_values_as_worked_by_hand():
    from raise_plugin.harness.stats import holm

    # sorted 0.01, 0.02, 0.03, 0.04 of m = 4: x4 = 0.04, x3 = 0.06, x2 = 0.06 (kept monotone), x1 = 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # 0.001 x 3 = 0.003; 0.2 x 2 = 0.4; 0.5 x 1 = 0.5; NaN is no test and does not count in m
    assert holm([0.5, float("nan"), 0.001, 0.2])[::2] == pytest.approx([0.5, 0.003])
    assert holm([0.5, 0.001, 0.2])[2] == pytest.approx(0.4)
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # capped at 1


def test_a_name_with_no_row_is_refused_naming_those_present():
    """A variant's key (`eoh-raise-eps0.002`, where the rows hold its label) or a misspelt baseline gave
    a mean of NaN over 0 pairs, and the verdict "no valid pairs", as if every program had failed."""
    from raise_plugin.errors import UserError

    rows = results("A", range(2), noisy(1, (2, 6))) + results("B", range(2), noisy(2, (2, 6)))
    for method, reference, says in (("a", "B", "no row of 'a'; the rows hold A, B$"),
                                    ("A", "Bb", "no row of 'Bb'; the rows hold A, B$"),
                                    ("A", "A", "a method is paired with another")):
        with pytest.raises(UserError, match=says):
            compare_paired(rows, method, reference, by_seed=True)
    all_invalid = results("C", range(2), noisy(3, (2, 6)), valid=[[False] * 6] * 2)
    assert compare_paired(rows + all_invalid, "C", "B", by_seed=True).pairs == 0  # present, all invalid: no pairs
