"""A line chart as inline SVG, built from strings: for a page written at the end of every run, where
loading and drawing with matplotlib would cost seconds. Every text is escaped."""
from __future__ import annotations

import math

from raise_plugin.harness.figure_style import PALETTE
from raise_plugin.harness.html_page import escape

__all__ = ["line_chart", "nice_ticks"]

WIDTH, PLOT_HEIGHT = 760, 240
LEFT, RIGHT, TOP = 64, 20, 52  # margins: the y ticks; the title and the y axis's quantity above the plot
LEGEND_ROW = 18


def nice_ticks(low: float, high: float, count: int = 6, integer: bool = False) -> list[float]:
    """About ``count`` round values from one at or below ``low`` to one at or above ``high`` (whole
    numbers only with ``integer``)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high <= low:  # one value: a band around it
        pad = 1 if integer else abs(low) * 0.01 or 1.0
        low, high = low - pad, high + pad
    raw = (high - low) / max(count - 1, 1)
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    if integer:
        step = max(1, round(step))
    first, ticks = math.floor(low / step + 1e-9) * step, []
    while not ticks or ticks[-1] < high - step * 1e-9:
        ticks.append(round(first + len(ticks) * step, 12))
    return ticks


def _label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}".replace("-", "−")


def line_chart(series: list[dict], *, title: str, x_label: str, y_label: str, marks: list[float] = (),
               mark_label: str = "") -> str:
    """An SVG chart of ``series`` (each ``{"label", "x", "y", "dashed"}``; colours from ``PALETTE``),
    whole-number x ticks (generations), vertical dotted ``marks`` (refreshes, named ``mark_label``) and
    a legend under the axes, one entry a row; the y axis's quantity (``y_label``) is written above the plot,
    where a long one is not cut."""
    points = [(x, y) for s in series for x, y in zip(s["x"], s["y"]) if y is not None and math.isfinite(y)]
    if not points:
        return f"<p>{escape(title)}: nothing to draw.</p>"
    xs, ys = [p[0] for p in points] + list(marks), [p[1] for p in points]
    x_ticks = nice_ticks(min(xs), max(xs), 8, integer=True)
    y_ticks = nice_ticks(min(ys), max(ys), 6)
    # generations: the axis spans the data; one generation sits in the middle, not on the frame beside a next one
    x0, x1 = (min(xs), max(xs)) if max(xs) > min(xs) else (min(xs) - 0.5, min(xs) + 0.5)
    y0, y1 = y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PLOT_HEIGHT
    legend_rows = len(series) + (1 if marks and mark_label else 0)
    height = TOP + plot_h + 44 + LEGEND_ROW * legend_rows
    sx = lambda x: LEFT + (x - x0) / ((x1 - x0) or 1) * plot_w  # noqa: E731
    sy = lambda y: TOP + plot_h - (y - y0) / ((y1 - y0) or 1) * plot_h  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'viewBox="0 0 {WIDTH} {height}" role="img" font-family="sans-serif" font-size="12">',
             f"<title>{escape(title)}</title>", f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
             f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
             f'<text x="{LEFT}" y="{TOP - 10}" font-size="12">{escape(y_label)}</text>']
    y_step = y_ticks[1] - y_ticks[0] if len(y_ticks) > 1 else 1.0
    for t in y_ticks:
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#e6e6e6"/>'
                     f'<text x="{LEFT - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{_label(t, y_step)}</text>')
    for t in (t for t in x_ticks if x0 <= t <= x1):
        parts.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#f0f0f0"/>'
                     f'<text x="{sx(t):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{int(t)}</text>')
    for m in marks:
        parts.append(f'<line x1="{sx(m):.1f}" x2="{sx(m):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#888" '
                     'stroke-dasharray="2,3"/>')
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 34}" text-anchor="middle">{escape(x_label)}</text>')
    legend = [(s["label"], PALETTE[k % len(PALETTE)], s.get("dashed", False)) for k, s in enumerate(series)]
    for k, s in enumerate(series):
        colour, dash = legend[k][1], ' stroke-dasharray="6,4"' if s.get("dashed") else ""
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(s["x"], s["y"]) if y is not None and math.isfinite(y))
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        parts += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="2.5" fill="{colour}"/>' for p in pts.split()]
    if marks and mark_label:
        legend.append((mark_label, "#888", "dots"))
    for k, (label, colour, dash) in enumerate(legend):
        x, y = LEFT, TOP + plot_h + 44 + LEGEND_ROW * (k + 0.6)
        pattern = ' stroke-dasharray="2,3"' if dash == "dots" else ' stroke-dasharray="6,4"' if dash else ""
        parts.append(f'<line x1="{x}" x2="{x + 28}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"'
                     f'{pattern}/><text x="{x + 34}" y="{y}">{escape(label)}</text>')
    return "\n".join(parts + ["</svg>"])
