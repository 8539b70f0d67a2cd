"""The figures: the adversarial-distribution figure measures each distribution from its eps-ball's
centre, the nearest nominal histogram, not from the mean of the nominal histograms; every figure
function returns its Figure (saving it when given a path); six variants stay readable in a grid."""
from __future__ import annotations

import copy
import struct

import numpy as np
import pytest
from matplotlib.figure import Figure

from raise_plugin.adversary import distance
from raise_plugin.cli import main
from raise_plugin.harness.figures import adversarial_centres, plot_adversarial_distributions, plot_convergence
from raise_plugin.rundir.reader import RunLog
from tasks import get_task

PNG = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A robust knapsack run that refreshed after every generation, and a plain one (without the
    validation trace, which these figures leave out when absent: tests/harness/test_compare.py
    draws it)."""
    root = tmp_path_factory.mktemp("runs")
    common = ["--task", "knapsack", "--pop-size", "4", "--no-validation-trace", "--no-progress"]
    assert main(["run", *common, "--robust", "--budget", "8", "--tau", "1", "--epsilon", "0.002",
                 "--out", str(root / "robust")]) == 0
    assert main(["run", *common, "--budget", "8", "--out", str(root / "plain")]) == 0
    return RunLog.load(root / "robust"), RunLog.load(root / "plain")


def six_variants(runs) -> dict:
    robust, plain = runs
    out = {}
    for method in ("EoH", "ReEvo", "MoH"):
        out[f"{method}, seed 0"] = plain
        out[f"RAISE-{method} (eps=0.002), seed 0"] = robust
    return out


def panels(fig: Figure) -> list:
    """The figure's panels (colour bars are axes too, but carry no title or data of their own)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def drawn(ax) -> bool:
    return bool(ax.lines or ax.patches or ax.collections)


def test_each_adversarial_distribution_is_shown_at_its_distance_from_the_nearest_nominal(runs, tmp_path):
    task, log = get_task("knapsack"), runs[0]
    nominal, found = adversarial_centres(task, log)
    assert found and len(nominal) == 5
    for _, p, index, d in found:
        assert d == pytest.approx(min(distance(p, h) for h in nominal)) and d == distance(p, nominal[index])
        assert d <= 0.002 + 1e-9  # what eps bounds
    # the mean nominal histogram is farther: measured from it, eps 0.002 would look like a large shift
    assert all(distance(p, nominal.mean(axis=0)) > d for _, p, _, d in found)
    fig = plot_adversarial_distributions({"run": log}, tmp_path / "f.png", task=task)
    top, bottom = panels(fig)
    assert len(bottom.lines) == len(found) + 1  # one step per distribution, and the zero line
    assert np.allclose(bottom.lines[0].get_ydata(), found[0][1] - nominal[found[0][2]])
    assert png_size(tmp_path / "f.png")[0] > 0


def test_figure_functions_return_a_figure_and_save_only_when_given_a_path(runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one = {"RAISE-EoH, seed 0": runs[0]}
    for fig in (plot_convergence(one), plot_adversarial_distributions(one)):  # the task: the one the run recorded
        assert isinstance(fig, Figure) and panels(fig)
    assert list(tmp_path.iterdir()) == []
    assert isinstance(plot_convergence(one, tmp_path / "c.png"), Figure)
    assert isinstance(plot_adversarial_distributions(one, path=tmp_path / "a.png", task="knapsack"), Figure)
    assert png_size(tmp_path / "c.png")[0] > 0 and png_size(tmp_path / "a.png")[0] > 0


def test_convergence_overlays_every_variant_as_its_mean_over_seeds_with_a_band(runs, tmp_path):
    robust, plain = runs
    fig = plot_convergence({"EoH": [plain, plain], "RAISE-EoH (eps=0.002)": [robust, robust]}, tmp_path / "c.png")
    (ax,) = panels(fig)  # no validation trace: the metric on the training set alone
    assert [line.get_label() for line in ax.lines] == ["EoH", "RAISE-EoH (eps=0.002)"]
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--"]  # plain solid, RAISE dashed
    assert ax.lines[0].get_color() == ax.lines[1].get_color()  # one colour per method
    assert len(ax.collections) == 2  # a band per variant
    assert ax.get_ylabel() == get_task("knapsack").metric_label  # the metric's name, unit and direction
    assert "2 seeds per variant (mean over seeds, band from the lowest to the highest seed)" in fig.get_suptitle()
    assert ax.get_legend() is None and fig.legends  # the legend is outside the data
    width, height = png_size(tmp_path / "c.png")
    assert width <= 2400 and height < width


def test_plain_runs_get_no_empty_panels_and_the_title_says_they_were_left_out(runs, tmp_path):
    variants = six_variants(runs)
    fig = plot_adversarial_distributions(variants, tmp_path / "a.png")
    width, _ = png_size(tmp_path / "a.png")
    assert width <= 2400
    shown = panels(fig)
    assert len(shown) == 3 * 2 and all(drawn(ax) for ax in shown)  # the three robust runs, two panels each
    assert {ax.get_title() for ax in shown} - {""} == {k for k in variants if k.startswith("RAISE")}
    title = fig.get_suptitle()
    assert "Not shown (they found none" in title and all(name in title for name in ("EoH, seed 0", "ReEvo, seed 0", "MoH, seed 0"))


def test_axes_name_the_quantity_of_the_tasks_shift_dimension(runs):
    fig = plot_adversarial_distributions({"robust": runs[0]})
    assert get_task("knapsack").shift.name == "item weight"
    assert [ax.get_xlabel() for ax in panels(fig) if ax.get_xlabel()] == ["item weight (1 to 59)"]
    only_plain = plot_adversarial_distributions({"plain": runs[1]})  # nothing found: the nominal histograms
    (ax,) = panels(only_plain)
    assert drawn(ax) and ax.get_xlabel() == "item weight (1 to 59)"


def test_runs_of_two_tasks_need_the_task_named_and_no_runs_is_refused(runs):
    other = copy.copy(runs[1])
    other.config = {**runs[1].config, "task": "obp"}
    with pytest.raises(ValueError, match="name one with task="):
        plot_adversarial_distributions({"robust": runs[0], "other": other})
    with pytest.raises(ValueError, match="no runs"):
        plot_convergence({})
