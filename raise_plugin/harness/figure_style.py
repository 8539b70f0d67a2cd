"""How the harness's figures look: a colour-blind-safe palette that prints (Okabe and Ito's, without
its yellow), a line style per kind of run, the metric's name, unit and direction on an axis, and
legends kept outside the data."""
from __future__ import annotations

__all__ = ["PALETTE", "series_style", "metric_axis_label", "legend_below", "SEQUENTIAL"]

# Okabe & Ito (2008), yellow left out: it is too faint on white paper
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
SEQUENTIAL = "viridis"  # for generations; its yellow end is cut off where it is used (``SEQUENTIAL_TOP``)


def series_style(index: int, dashed: bool = False) -> dict:
    """Colour, marker and line style of the ``index``-th series (dashed for the second kind of a pair)."""
    return {"color": PALETTE[index % len(PALETTE)], "marker": MARKERS[index % len(MARKERS)], "markersize": 4,
            "linestyle": "--" if dashed else "-", "linewidth": 1.6}


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
