"""The run page's inline SVG chart: whole-number generations on the x axis, the data inside the frame."""
from __future__ import annotations

import re

from raise_plugin.harness.html_svg import LEFT, RIGHT, WIDTH, line_chart


def test_a_run_of_one_generation_is_drawn_mid_panel_at_its_one_generation():
    # one generation sat on the left edge of the frame, under an axis ticked 1 and 2 (a generation never run)
    svg = line_chart([{"label": "best", "x": [1], "y": [0.5]}, {"label": "mean", "x": [1], "y": [15.0]}],
                     title="t", x_label="generation", y_label="y")
    middle = LEFT + (WIDTH - LEFT - RIGHT) / 2
    assert [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)] == [middle, middle]
    ticks = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert ticks == ["1"]


def test_generations_span_the_axis_from_the_first_to_the_last():
    svg = line_chart([{"label": "best", "x": [1, 2, 3], "y": [3.0, 2.0, 1.0]}], title="t", x_label="generation",
                     y_label="y")
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert xs == [LEFT, LEFT + (WIDTH - LEFT - RIGHT) / 2, WIDTH - RIGHT]
    assert re.findall(r'text-anchor="middle">(\d+)</text>', svg) == ["1", "2", "3"]
