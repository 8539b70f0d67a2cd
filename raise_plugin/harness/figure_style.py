"""How the harness's figures look: a colour-blind-safe palette that prints (Okabe and Ito's, without
its yellow), a colour, marker and line style per series, the metric's name, unit and direction on an
axis, and legends kept outside the data."""
from __future__ import annotations

__all__ = ["PALETTE", "MARKERS", "SEQUENTIAL", "SEQUENTIAL_TOP", "series_style", "band_style",
           "sequential_colour", "metric_axis_label", "legend_below"]

# Okabe & Ito (2008), yellow left out: it is too faint on white paper. Ordered dark, light, dark, ...
# (grey levels 0, 162, 87, 119, 106, 158, 151), so series 2k and 2k + 1, a plain run and its RAISE twin
# as compare orders them, differ when printed in grey, and so do the first two of each kind
PALETTE = ("#000000", "#E69F00", "#0072B2", "#D55E00", "#009E73", "#56B4E9", "#CC79A7")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # eight against seven colours: a pair repeats after 56 series
SEQUENTIAL = "viridis"  # for generations: its lightness rises monotonically, so the order survives grey print
SEQUENTIAL_TOP = 0.75  # viridis beyond this is a light yellow-green that fades on paper


def series_style(index: int, dashed: bool = False) -> dict:
    """Colour, marker and line style of the ``index``-th series: each index its own colour and marker;
    ``dashed`` (a RAISE series) dashed with open markers, otherwise (a plain one) solid with filled markers, so a
    series is told from another by its line and marker as well as its colour."""
    colour = PALETTE[index % len(PALETTE)]
    return {"color": colour, "marker": MARKERS[index % len(MARKERS)], "markersize": 5,
            "markerfacecolor": "white" if dashed else colour, "markeredgecolor": colour,
            "linestyle": "--" if dashed else "-", "linewidth": 1.6}


def band_style(style: dict, alpha: float = 0.1) -> dict:
    """A light band in the colour of ``style``'s line, with thin edges in its line style: overlapping
    bands stay apart where their fills blend."""
    from matplotlib.colors import to_rgba
    return {"facecolor": to_rgba(style["color"], alpha), "edgecolor": to_rgba(style["color"], 0.7),
            "linestyle": style["linestyle"], "linewidth": 0.8}


def sequential_colour(value: float):
    """The colour of ``value`` in [0, 1] (a generation scaled to the run's range) on ``SEQUENTIAL``, cut at
    ``SEQUENTIAL_TOP``."""
    from matplotlib import colormaps
    return colormaps[SEQUENTIAL](SEQUENTIAL_TOP * min(max(value, 0.0), 1.0))


def metric_axis_label(task) -> str:
    """``"route length (ratio to Clarke-Wright's), lower is better"``: the task's metric, unit and direction."""
    label = getattr(task, "metric_label", None)
    if label:
        return label
    name = getattr(task, "metric_name", "metric")
    unit = getattr(task, "metric_unit", "")
    return f"{name}{f' ({unit})' if unit else ''}, lower is better"


def legend_below(fig, axes, columns: int = 3, fontsize: float = 8) -> None:
    """One legend for ``axes`` below the figure, outside every panel (the handles of the first axes that
    has each label)."""
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels and not label.startswith("_"):
                handles.append(h)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(columns, len(labels)), fontsize=fontsize,
                   frameon=False)
