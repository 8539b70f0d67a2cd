"""A run's best program as every summary prints it: the task's metric aggregated over the set the
run trained on, with its name, unit and direction; the host's score (minus that) only labelled."""
from __future__ import annotations

import dataclasses
import math

from raise_plugin.errors import UserError
from tasks import get_task
from tasks.common.aggregation import Aggregation

__all__ = ["best_line", "trained_metric"]


def best_line(score, program_id, recorded: dict) -> str:
    """The best program's value as the tables print it: the task's metric aggregated over the set the
    run trained on (name, unit, direction), then the host's score it is minus of, labelled."""
    if not isinstance(score, (int, float)) or not math.isfinite(score):
        return "none"
    where = ("the nominal set grown by adversarial instances" if recorded.get("robust", True)
             else "the nominal set")
    program = f"{program_id}; " if program_id else ""
    value = 0.0 - score  # not -score: a host score of 0 is a metric of 0, not -0
    return f"{value:.6g}: {trained_metric(recorded)} on {where}, lower is better ({program}host score {score:.6g})"


def trained_metric(recorded: dict) -> str:
    """What minus a run's score is, in words (its ``recorded`` settings: the task's metric as its
    aggregation takes it over the set the run trained on): ``"worst waste ratio (%) regret against
    bestfit"``, ``"mean route length (ratio to Clarke-Wright's)"``."""
    try:
        task = get_task(recorded["task"])
        metric = task.metric_name + (f" ({task.metric_unit})" if task.metric_unit else "")
    except (KeyError, ValueError, ImportError, UserError):  # a task no longer where it was recorded
        metric = "metric"
    robust = recorded.get("robust", True)
    try:
        aggregation = Aggregation.parse(recorded.get("aggregation") or "mean")
        if aggregation.kind == "balanced" and not robust:  # no adversarial instance to weigh: the nominal mean
            aggregation = dataclasses.replace(aggregation, kind="mean")
        words = aggregation.describe(metric)
    except ValueError:
        words = metric
    return words
