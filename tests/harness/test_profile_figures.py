"""The robustness profile's figures: the shift axis in the task's own units ticked at whole values,
legends outside every panel, series in the harness's palette, the metric's name, unit and direction on
the y axis, and the title saying what a line and its band are."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex
from matplotlib.patches import StepPatch

from raise_plugin.harness.figure_style import PALETTE
from raise_plugin.harness.profile_files import save_profile
from raise_plugin.harness.robustness_profile import (INVALID_THERE, Profile, ProfilePoint, plot_profile,
                                                     plot_worst_distributions)
from tasks import get_task

EPS = [0.002, 0.005, 0.01]
HEURISTICS = ["BestFit", "FirstFit", "WorstFit"]


def synthetic_profile(seeds=(0, 1, 2), task="obp", failed=()) -> Profile:
    """A profile of ``task`` as a search would leave it, without searching: each (heuristic, eps,
    seed) a random distribution over the task's cells; ``failed``: (heuristic, eps) whose searches all failed."""
    cells = get_task(task).shift.cells
    rng = np.random.default_rng(0)
    nominal = rng.dirichlet(np.ones(cells))
    points = []
    for h in HEURISTICS:
        for e in EPS:
            for s in seeds:
                if (h, e) in failed:
                    points.append(ProfilePoint(h, e, s, math.nan, math.nan, [], "the search timed out"))
                else:
                    points.append(ProfilePoint(h, e, s, 2.0 + 100 * e + rng.random(), e * rng.random(),
                                               rng.dirichlet(np.ones(cells)).tolist()))
    return Profile(task, EPS, list(seeds), {h: 1.5 for h in HEURISTICS}, points, nominal.tolist(),
                   {h: 1.7 for h in HEURISTICS}, 5, get_task(task).shift.name)


def rendered(fig):
    """``fig`` drawn by Agg, and the renderer that laid it out."""
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def steps(ax) -> list[StepPatch]:
    return [p for p in ax.patches if isinstance(p, StepPatch)]


def test_the_shift_axis_is_ticked_at_whole_values_within_the_tasks_range():
    task = get_task("obp")
    high = int(task.shift_values(task.nominal_instances()[0])[1])
    fig = plot_worst_distributions(synthetic_profile(), "BestFit")
    rendered(fig)
    ax = fig.axes[-1]
    assert ax.get_xlabel() == f"item size ({task.shift.low} to {high})"
    assert ax.get_xlim() == (task.shift.low - 0.5, high + 0.5)
    low, top = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if low <= t <= top]
    assert len(ticks) >= 3 and all(float(t).is_integer() and task.shift.low <= t <= high for t in ticks)
    labels = [t.get_text() for x, t in zip(ax.get_xticks(), ax.get_xticklabels()) if low <= x <= top]
    assert labels and all(label.isdigit() and task.shift.low <= int(label) <= high for label in labels)


def test_each_eps_has_its_panel_with_the_worst_seeds_distribution_over_the_cells():
    profile = synthetic_profile()
    fig = plot_worst_distributions(profile, "FirstFit")
    assert len(fig.axes) == len(EPS)
    for ax, e in zip(fig.axes, EPS):
        nominal, worst = steps(ax)
        assert len(worst.get_data().values) == get_task("obp").shift.cells
        assert np.allclose(worst.get_data().values, profile.worst_distribution("FirstFit", e))
        assert ax.get_title(loc="left").startswith(f"eps = {e:g}: waste ratio (%) = ")


def test_a_failed_eps_gets_a_panel_that_says_so_and_a_gap_in_the_profile():
    profile = synthetic_profile(failed=[("BestFit", 0.005)])
    fig = plot_worst_distributions(profile, "BestFit")
    assert fig.axes[1].get_title(loc="left") == "eps = 0.005: no search found an instance (the search timed out)"
    assert len(steps(fig.axes[1])) == 1  # the nominal histograms' mean only
    line = plot_profile(profile).axes[0].lines[0]
    assert math.isnan(line.get_ydata()[2]) and np.isfinite(line.get_ydata()[[0, 1, 3]]).all()


@pytest.mark.parametrize("draw", [plot_profile, lambda p: plot_worst_distributions(p, "WorstFit")],
                         ids=["profile", "worst distributions"])
def test_legends_lie_outside_every_panel(draw):
    fig = draw(synthetic_profile())
    renderer = rendered(fig)
    assert fig.legends and not any(ax.get_legend() for ax in fig.axes)
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax.get_tightbbox(renderer)) for ax in fig.axes)


def test_each_heuristic_has_its_own_palette_colour_and_marker():
    fig = plot_profile(synthetic_profile())
    lines = fig.axes[0].lines
    assert [line.get_label() for line in lines] == HEURISTICS
    colours = [to_hex(line.get_color()).upper() for line in lines]
    assert colours == list(PALETTE[:len(HEURISTICS)])
    assert len({line.get_marker() for line in lines}) == len(HEURISTICS)
    worst = plot_worst_distributions(synthetic_profile(), "BestFit")
    assert {to_hex(steps(ax)[1].get_edgecolor()).upper() for ax in worst.axes} <= set(PALETTE)


def test_the_x_axis_is_ticked_at_the_profiled_radii_from_the_nominal_set():
    ax = plot_profile(synthetic_profile()).axes[0]
    assert list(ax.get_xticks()) == [0.0, *EPS]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", *(f"{e:g}" for e in EPS)]
    assert list(ax.lines[0].get_xdata()) == [0.0, *EPS]


@pytest.mark.parametrize("task", ["obp", "ojsp"])
def test_the_y_axis_names_the_metric_its_unit_and_lower_is_better(task):
    t = get_task(task)
    profile = synthetic_profile(task=task)
    label = " ".join(plot_profile(profile).axes[0].get_ylabel().split())
    assert label == f"worst instance's {t.metric_name} ({t.metric_unit}), lower is better"


def test_the_title_says_what_line_and_band_are():
    fig = plot_profile(synthetic_profile())
    title = " ".join(fig.get_suptitle().split())
    assert title.startswith("Worst waste ratio the adversary finds within eps on obp")
    assert "line: mean over 3 adversary seeds; band: from the lowest to the highest seed" in title
    assert "at eps 0: the worst of the 5 nominal instances" in title
    assert sum(isinstance(c, PolyCollection) for c in fig.axes[0].collections) == len(HEURISTICS)


def test_the_band_spans_what_the_seeds_found_and_never_beyond():
    """The band was the 95 % t interval of the mean: with two seeds (t = 12.7) it reached below 0 for
    a waste ratio, a value no seed can find. It spans the lowest to the highest seed's worst metric,
    as the compare's convergence bands span theirs."""
    profile = synthetic_profile(seeds=(0, 1))
    fig = plot_profile(profile)
    for h, band in zip(HEURISTICS, [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]):
        ys = band.get_paths()[0].vertices[:, 1]
        found = np.concatenate([profile.worst(h, e) for e in EPS])
        nominal = profile.nominal_worst[h]
        assert ys.min() == pytest.approx(min(found.min(), nominal)) and ys.max() == pytest.approx(found.max())


def test_one_seed_draws_no_band_and_the_title_says_so():
    fig = plot_profile(synthetic_profile(seeds=(4,)))
    assert "line: adversary seed 4 (one seed, so no band)" in " ".join(fig.get_suptitle().split())
    assert not fig.axes[0].collections


def test_a_heuristic_a_profile_lacks_a_profile_or_a_path_is_refused_in_one_line(tmp_path):
    # plot_worst_distributions(p, "nope") drew a near-empty figure where worst_distribution refuses the name;
    # plot_profile(42) and path=42 were AttributeErrors
    from raise_plugin.errors import UserError
    profile = synthetic_profile()
    for call, said in ((lambda: plot_worst_distributions(profile, "nope"), "^the profile has no 'nope' at eps 0.002; "
                        "it has BestFit, FirstFit, WorstFit at eps 0.002, 0.005, 0.01$"),
                       (lambda: plot_profile(42), r"^plot_profile: profile: give a Profile \(rp.profile\(...\)\), "
                                                  "got int$"),
                       (lambda: plot_profile(profile, 42), "^plot_profile: path: give the file to save the figure "
                                                           "to, got int 42$")):
        with pytest.raises(UserError, match=said):
            call()
    with pytest.raises(UserError, match="the profile has no 'nope'"):
        profile.worst_distribution("nope", 0.002)


def invalid_everywhere(profile: Profile, heuristic: str) -> Profile:
    """``profile`` with ``heuristic`` failing on the nominal set and on every instance its searches found."""
    reason = INVALID_THERE + "priority raised ValueError: always fails"
    points = [replace(p, metric=math.inf, reason=reason) if p.heuristic == heuristic else p for p in profile.points]
    return replace(profile, points=points, nominal={**profile.nominal, heuristic: math.nan},
                   nominal_worst={**profile.nominal_worst, heuristic: math.nan})


def test_a_heuristic_invalid_everywhere_is_named_so_in_the_legend_and_its_panels_say_why():
    # its legend entry stood for a line never drawn, and each panel's title read "waste ratio (%) = inf"
    profile = invalid_everywhere(synthetic_profile(), "FirstFit")
    labels = [t.get_text() for t in plot_profile(profile).legends[0].get_texts()]
    assert labels == ["BestFit", "FirstFit (invalid everywhere: no point)", "WorstFit"]
    fig = plot_worst_distributions(profile, "FirstFit")
    for ax, e in zip(fig.axes, EPS):
        title = ax.get_title(loc="left")
        assert title.startswith(f"eps = {e:g}: invalid (priority raised ValueError: always fails) (seed ")
        assert "inf" not in title.replace("invalid", "")


def test_each_heuristic_s_worst_distributions_get_a_file_of_their_own_and_an_earlier_profile_s_go(tmp_path):
    # "a b" and "a_b" were both worst_distributions_a_b.png, the second drawn over the first; a profile of
    # other heuristics into the same folder left the earlier one's figures beside it
    (tmp_path / "worst_distributions_gone.png").write_bytes(b"an earlier profile's")
    names = {"BestFit": "a b", "FirstFit": "a_b", "WorstFit": "A_B"}
    profile = synthetic_profile()
    profile = replace(profile, points=[replace(p, heuristic=names[p.heuristic]) for p in profile.points],
                      nominal={names[h]: v for h, v in profile.nominal.items()},
                      nominal_worst={names[h]: v for h, v in profile.nominal_worst.items()})
    written = save_profile(profile, tmp_path)
    figures = sorted(p.name for p in tmp_path.glob("worst_distributions_*.png"))
    assert figures == ["worst_distributions_A_B_3.png", "worst_distributions_a_b.png",
                       "worst_distributions_a_b_2.png"]  # A_B too: one file apart on a case-blind file system
    assert len(set(written)) == len(written) == 6


def test_the_profile_table_says_why_its_cells_are_invalid_and_profile_md_keeps_it(tmp_path):
    # the reasons were printed on the console only: profile.md showed "invalid" with no word of why
    profile = invalid_everywhere(synthetic_profile(), "WorstFit")
    text = profile.markdown()
    assert "| eps=0.01: worst instance found |" in text and "| invalid |" in text
    assert text.endswith("\n\n- WorstFit: 9 of 9 searches failed: invalid on the worst instance found: priority "
                         "raised ValueError: always fails")
    save_profile(profile, tmp_path)
    assert "- WorstFit: 9 of 9 searches failed: " in (tmp_path / "profile.md").read_text()


def test_a_profile_with_no_point_keeps_its_radii_apart_and_says_why_it_is_empty():
    # with every heuristic invalid everywhere the axis spanned -0.05 to 0.05 and the ticks 0 and 0.002 were
    # printed over each other ("00002"), on an empty panel with no word of why
    profile = synthetic_profile()
    for h in HEURISTICS:
        profile = invalid_everywhere(profile, h)
    ax = plot_profile(profile).axes[0]
    assert ax.get_xlim() == pytest.approx((-0.05 * EPS[-1], 1.05 * EPS[-1]))
    said = "no point: every heuristic is invalid everywhere\n(profile.md says why)"
    assert [t.get_text() for t in ax.texts] == [said]
    drawn = plot_profile(synthetic_profile()).axes[0]
    assert drawn.get_xlim() == pytest.approx((-0.05 * EPS[-1], 1.05 * EPS[-1])) and not drawn.texts
