"""The figures: the adversarial-distribution figure measures each distribution from its eps-ball's
centre, the nearest nominal histogram, not from the mean of the nominal histograms, on an axis in the
shift dimension's units; every figure function returns its Figure (saving it when given a path); six
variants stay readable in a grid; each convergence series has its own colour, line and marker, and no
legend covers the data."""
from __future__ import annotations

import copy
import struct

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import StepPatch

from raise_plugin.adversary import distance
from raise_plugin.cli import main
from raise_plugin.errors import UserError
from raise_plugin.harness.figures import (LEGEND_ENTRIES, SHIFT_TICKS, adversarial_centres, convergence_series,
                                          finish_figure, plot_adversarial_distributions, plot_convergence)
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
    assert main(["run", *common, "--no-robust", "--budget", "8", "--out", str(root / "plain")]) == 0
    return RunLog.load(root / "robust"), RunLog.load(root / "plain")


def test_figure_functions_read_a_run_directory_and_refuse_what_is_not_a_run_in_one_line(runs, tmp_path):
    # each was an AttributeError from deep inside ('int' object has no attribute 'config')
    robust = runs[0]
    given = plot_adversarial_distributions({"robust": str(robust.path)})
    assert [ax.get_title() for ax in given.axes] == [ax.get_title() for ax in
                                                     plot_adversarial_distributions({"robust": robust}).axes]
    assert panels(plot_convergence({"robust": [robust.path, robust]}))
    for function in (plot_convergence, plot_adversarial_distributions):
        for bad, said in (({}, "got no runs"), ([robust], "got list"), ({"a": 5}, "'a' is a int, not a RunLog"),
                          ({"a": tmp_path / "none"}, "no such directory")):
            with pytest.raises(UserError, match=said) as caught:
                function(bad)
            assert "\n" not in str(caught.value)


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


def steps(ax) -> list[StepPatch]:
    """The distributions drawn in ``ax``, one step curve over the shift dimension's cells each."""
    return [p for p in ax.patches if isinstance(p, StepPatch)]


def legends(fig) -> list:
    """Every legend of the figure: its own, its sub-figures' and its panels'."""
    figures = [fig, *fig.subfigs]
    return [lg for f in figures for lg in f.legends] + [ax.get_legend() for ax in fig.axes if ax.get_legend()]


def rendered(fig):
    """``fig`` drawn by Agg, and the renderer that laid it out (so extents are where the pixels are)."""
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


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
    assert len(steps(bottom)) == len(found) and len(bottom.lines) == 1  # a step per distribution; the zero line
    assert np.allclose(steps(bottom)[0].get_data().values, found[0][1] - nominal[found[0][2]])
    assert png_size(tmp_path / "f.png")[0] > 0
    # the legend names the centre, then each distribution once: the last, drawn in both panels, with its own
    labels = [text.get_text() for sub in fig.subfigs for legend in sub.legends for text in legend.get_texts()]
    if len(found) <= LEGEND_ENTRIES:
        assert len(labels) == len(set(labels)) == len(found) + 1, labels
        gen, _, index, d = found[-1]
        assert labels[-1] == f"generation {gen} (drawn above): d = {d:.3g} to nominal {index + 1}"
    else:
        assert labels[1].startswith(f"found at generation {found[-1][0]}, d = "), labels


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
    assert len(ax.collections) == 2  # a band per variant
    # the set a run trained on, in its aggregation's terms: the metric's name, unit and direction
    assert ax.get_ylabel() == "mean " + get_task("knapsack").metric_label
    assert "2 seeds per variant\nline: mean over seeds; band: lowest to highest seed" in fig.get_suptitle()
    assert ax.get_legend() is None and fig.legends  # the legend is outside the data
    width, height = png_size(tmp_path / "c.png")
    assert width <= 2400 and height < width


def test_the_training_panel_names_what_a_worst_case_or_regret_run_was_scored_by(runs):
    """Minus a run's score is its aggregation of the metric (OBP's default: the worst regret against
    BestFit), not the metric: an axis that said "waste ratio" would read a regret of 0 as no waste."""
    robust, plain = runs
    worst = copy.copy(robust)
    worst.config = {**robust.config, "aggregation": "regret:min"}
    (ax,) = panels(plot_convergence({"RAISE-EoH": [worst]}))
    assert ax.get_ylabel().replace("\n", " ") == ("worst optimality gap (%) regret against the best baseline per "
                                                  "instance, lower is better")
    (ax,) = panels(plot_convergence({"EoH": [plain], "RAISE-EoH": [worst]}))  # one axis, both runs' terms
    assert ax.get_ylabel().replace("\n", " ").startswith("mean optimality gap (%) / worst optimality gap (%) regret")


def test_plain_runs_get_no_empty_panels_and_the_title_says_they_were_left_out(runs, tmp_path):
    variants = six_variants(runs)
    fig = plot_adversarial_distributions(variants, tmp_path / "a.png")
    width, _ = png_size(tmp_path / "a.png")
    assert width <= 2400
    shown = panels(fig)
    assert len(shown) == 3 * 2 and all(drawn(ax) for ax in shown)  # the three robust runs, two panels each
    assert {ax.get_title() for ax in shown} - {""} == {k for k in variants if k.startswith("RAISE")}
    title = fig.get_suptitle()
    assert "Not shown, as they found none" in title and all(name in title for name in ("EoH, seed 0", "ReEvo, seed 0", "MoH, seed 0"))


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
    with pytest.raises(UserError, match="name one with task="):
        plot_adversarial_distributions({"robust": runs[0], "other": other})
    with pytest.raises(UserError, match="no runs"):
        plot_convergence({})


def test_a_figure_refuses_a_task_a_label_or_a_path_it_cannot_take_in_one_line_before_drawing(runs, tmp_path):
    # task="obp" on knapsack runs was a KeyError 'items', task=42 and path=42 AttributeErrors, a label with no
    # runs named plot_adversarial_distributions and task=, a path in a missing folder a FileNotFoundError
    one = {"robust": runs[0]}
    for call, said in ((lambda: plot_adversarial_distributions(one, task="obp"),
                        "^plot_adversarial_distributions: task 'obp': the runs were trained on knapsack: leave task= "
                        "out or name the runs' task$"),
                       (lambda: plot_adversarial_distributions(one, task=42),
                        "^plot_adversarial_distributions: task: give a task or its name, got int 42$"),
                       (lambda: plot_convergence({"a": []}),
                        "^plot_convergence: 'a' holds no runs: give each label a RunLog, a run directory or a list "
                        "of them$"),
                       (lambda: plot_convergence(one, 42),
                        "^plot_convergence: path: give the file to save the figure to, got int 42$"),
                       (lambda: plot_convergence(one, tmp_path / "c.nope"),
                        r"^plot_convergence: path '.*c.nope': a .nope file is no figure format \(.*png.*\)$")):
        with pytest.raises(UserError, match=said):
            call()
    assert list(tmp_path.iterdir()) == []
    assert png_size(plot_convergence(one, tmp_path / "new" / "c.png") and tmp_path / "new" / "c.png")[0] > 0


def test_runs_labelled_by_seed_numbers_are_drawn_under_their_text(runs):
    """``{0: RunLog, 1: RunLog}``, runs by seed as a notebook keys them, was an AttributeError ('int' object has no
    attribute 'startswith'); labels alike as text are one line."""
    robust, plain = runs
    by_seed = plot_convergence({0: plain, 1: robust})
    assert by_seed.axes[0].get_legend_handles_labels()[1] == \
        plot_convergence({"0": plain, "1": robust}).axes[0].get_legend_handles_labels()[1]
    assert [ax.get_title() for ax in plot_adversarial_distributions({7: robust}).axes if ax.get_title()]
    for function in (plot_convergence, plot_adversarial_distributions):
        with pytest.raises(UserError, match=f"^{function.__name__}: two runs are labelled '0'$"):
            function({0: robust, "0": plain})


def test_a_plain_run_and_its_raise_twin_differ_in_colour_line_and_marker_and_their_bands_in_colour(runs):
    robust, plain = runs
    fig = plot_convergence({"EoH": [plain, plain], "RAISE-EoH (eps=0.002)": [robust, robust],
                            "ReEvo": [plain, plain], "RAISE-ReEvo (eps=0.002)": [robust, robust]})
    (ax,) = panels(fig)
    colours = [line.get_color() for line in ax.lines]
    assert len(set(colours)) == 4 and len({line.get_marker() for line in ax.lines}) == 4
    assert [line.get_linestyle() for line in ax.lines] == ["-", "--", "-", "--"]  # plain solid, RAISE dashed
    assert ax.lines[0].get_markerfacecolor() != ax.lines[1].get_markerfacecolor()  # filled against open
    for line, band in zip(ax.lines, ax.collections):
        face, edge = band.get_facecolor()[0], band.get_edgecolor()[0]
        assert face[3] <= 0.15 and edge[3] > face[3]  # a light band with a visible edge
        assert np.allclose(edge[:3], to_rgb(line.get_color()))


def test_the_line_is_the_mean_over_seeds_and_the_band_their_lowest_and_highest(runs):
    seeds = [convergence_series(log) for log in runs]
    common = sorted(set(seeds[0]["generation"]) & set(seeds[1]["generation"]))
    values = np.array([[dict(zip(s["generation"], s["best"]))[g] for g in common] for s in seeds])
    fig = plot_convergence({"two runs": list(runs)}, task="knapsack")
    (ax,) = panels(fig)
    assert np.allclose(ax.lines[0].get_xdata(), common) and np.allclose(ax.lines[0].get_ydata(), values.mean(axis=0))
    edge = ax.collections[0].get_paths()[0].vertices
    for g, low, high in zip(common, values.min(axis=0), values.max(axis=0)):
        assert np.allclose(sorted({y for x, y in edge if x == g}), sorted({low, high}))
    assert "line: mean over seeds; band: lowest to highest seed" in fig.get_suptitle()


def test_the_shift_axis_is_ticked_at_a_few_whole_values_of_the_shift_quantity(runs):
    task = get_task("knapsack")
    high = int(task.shift_values(runs[0].instance(next(iter(runs[0].instances))))[1])
    for fig in (plot_adversarial_distributions({"robust": runs[0]}), plot_adversarial_distributions({"plain": runs[1]})):
        ax = panels(fig)[-1]
        rendered(fig)
        assert ax.get_xlim() == (task.shift.low - 0.5, high + 0.5)  # the axis spans the cells, in item weights
        low, top = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if low <= t <= top]
        assert 3 <= len(ticks) <= SHIFT_TICKS + 1 and all(float(t).is_integer() for t in ticks)
        labels = [t.get_text().replace("\N{MINUS SIGN}", "-") for t in ax.get_xticklabels() if t.get_text()]
        assert labels and all(label.isdigit() for label in labels)


def test_no_legend_covers_a_panel(runs, tmp_path):
    robust, plain = runs
    figures = [plot_convergence({"EoH": plain, "RAISE-EoH (eps=0.002)": robust}),
               plot_adversarial_distributions({"robust": robust}), plot_adversarial_distributions({"plain": plain}),
               plot_adversarial_distributions(six_variants(runs))]
    for fig in figures:
        renderer = rendered(fig)
        assert legends(fig)
        for legend in legends(fig):
            box = legend.get_window_extent(renderer)
            assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in panels(fig))


def test_a_figure_is_written_as_png_and_as_pdf(runs, tmp_path):
    fig = plot_convergence({"RAISE-EoH, seed 0": runs[0]})
    finish_figure(fig, tmp_path / "c.png")
    finish_figure(fig, tmp_path / "c.pdf")
    assert png_size(tmp_path / "c.png")[0] > 0 and (tmp_path / "c.pdf").read_bytes()[:5] == b"%PDF-"


def test_a_run_of_one_generation_is_ticked_at_that_generation_not_at_fractions(tmp_path):
    # a panel with one generation (a short run, a validation trace of one point) was ticked 0.945 ... 1.050
    assert main(["run", "--task", "knapsack", "--pop-size", "4", "--budget", "4", "--no-robust",
                 "--no-validation-trace", "--no-progress", "--out", str(tmp_path / "run")]) == 0
    fig = plot_convergence({"EoH": [RunLog.load(tmp_path / "run")]})
    FigureCanvasAgg(fig).draw()
    (ax,) = panels(fig)
    low, high = ax.get_xlim()
    assert [t.get_text() for x, t in zip(ax.get_xticks(), ax.get_xticklabels()) if low <= x <= high] == ["1"]
