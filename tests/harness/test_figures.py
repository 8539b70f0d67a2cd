"""The adversarial-distribution figure measures each distribution from its eps-ball's centre, the
nearest nominal histogram, not from the mean of the nominal histograms."""
from __future__ import annotations

import numpy as np
import pytest

from raise_plugin.adversary import distance
from raise_plugin.cli import main
from raise_plugin.harness.figures import adversarial_centres, plot_adversarial_distributions
from raise_plugin.rundir.reader import RunLog
from tasks import get_task


def test_each_adversarial_distribution_is_shown_at_its_distance_from_the_nearest_nominal(tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--task", "knapsack", "--robust", "--budget", "16", "--pop-size", "4", "--tau", "1",
                 "--epsilon", "0.002", "--out", str(out), "--no-progress"]) == 0
    task, log = get_task("knapsack"), RunLog.load(out)
    nominal, found = adversarial_centres(task, log)
    assert found and len(nominal) == 5
    for _, p, index, d in found:
        assert d == pytest.approx(min(distance(p, h) for h in nominal)) and d == distance(p, nominal[index])
        assert d <= 0.002 + 1e-9  # what eps bounds
    # the mean nominal histogram is farther: measured from it, eps 0.002 would look like a large shift
    assert all(distance(p, nominal.mean(axis=0)) > d for _, p, _, d in found)
    assert plot_adversarial_distributions(task, {"run": log}, tmp_path / "f.png") == len(found)
    assert (tmp_path / "f.png").stat().st_size > 0
