"""The figures' style: every series its own colour and marker, a plain run solid and a RAISE run dashed
with open markers, a plain run's colour and its RAISE twin's apart in grey print, generations dark to mid, never faint."""
from __future__ import annotations

from matplotlib.colors import to_rgb

from raise_plugin.harness.figure_style import (PALETTE, SEQUENTIAL_TOP, band_style, metric_axis_label,
                                               sequential_colour, series_style)


def grey(colour) -> float:
    """The grey level (0 black, 1 white) a colour prints as (ITU-R 601 luma, what PIL's convert('L') uses)."""
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_every_series_has_its_own_colour_and_marker():
    styles = [series_style(k, dashed=k % 2 == 1) for k in range(len(PALETTE))]
    assert len({s["color"] for s in styles}) == len(PALETTE) and len({s["marker"] for s in styles}) == len(PALETTE)
    assert "#F0E442" not in PALETTE  # Okabe-Ito's yellow does not print


def test_a_raise_series_is_dashed_with_open_markers_and_a_plain_one_solid_and_filled():
    plain, robust = series_style(0), series_style(0, dashed=True)
    assert (plain["linestyle"], robust["linestyle"]) == ("-", "--")
    assert plain["markerfacecolor"] == plain["color"] and robust["markerfacecolor"] == "white"


def test_a_plain_run_and_its_raise_twin_and_the_first_two_of_each_kind_differ_in_grey():
    levels = [grey(c) for c in PALETTE]
    assert all(abs(levels[k] - levels[k + 1]) >= 0.1 for k in range(0, len(levels) - 1, 2))  # series 2k, 2k + 1
    assert abs(levels[0] - levels[2]) >= 0.1 and abs(levels[1] - levels[3]) >= 0.1


def test_a_band_is_light_with_an_edge_of_its_lines_colour():
    style = series_style(2, dashed=True)
    band = band_style(style)
    assert band["facecolor"][3] <= 0.15 < band["edgecolor"][3]
    assert band["facecolor"][:3] == to_rgb(style["color"]) and band["linestyle"] == "--"


def test_generations_run_from_dark_to_a_mid_tone_that_still_prints():
    levels = [grey(sequential_colour(v)[:3]) for v in (0.0, 0.5, 1.0, 2.0)]
    assert levels[0] < levels[1] < levels[2] == levels[3] < 0.7  # monotone, clipped at SEQUENTIAL_TOP
    assert 0 < SEQUENTIAL_TOP < 1


def test_an_axis_says_the_metric_its_unit_and_that_lower_is_better():
    class Task:
        metric_name, metric_unit = "route length", "km"
    assert metric_axis_label(Task()) == "route length (km), lower is better"
