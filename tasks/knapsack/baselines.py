"""Classical knapsack rules in the host's signature: the next item to pack, or None to stop."""
from __future__ import annotations


def _best_fitting(remaining_capacity, remaining_items, key):
    fitting = [item for item in remaining_items if item[0] <= remaining_capacity]
    return max(fitting, key=key) if fitting else None  # max keeps the first of equal keys


def greedy_ratio(remaining_capacity, remaining_items):
    """GreedyRatio (the host's template): the fitting item with the largest value / weight."""
    return _best_fitting(remaining_capacity, remaining_items, lambda item: item[1] / item[0])


def greedy_value(remaining_capacity, remaining_items):
    """GreedyValue: the fitting item with the largest value."""
    return _best_fitting(remaining_capacity, remaining_items, lambda item: item[1])


def lightest_first(remaining_capacity, remaining_items):
    """LightestFirst: the fitting item with the smallest weight (the most items)."""
    return _best_fitting(remaining_capacity, remaining_items, lambda item: -item[0])


BASELINES = {"GreedyRatio": greedy_ratio, "GreedyValue": greedy_value, "LightestFirst": lightest_first}
