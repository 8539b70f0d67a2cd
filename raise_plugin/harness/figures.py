"""The paper's figures from run directories: convergence and adversarial distributions.

Every figure function takes what it draws first (the runs, a profile), ``path=None`` next,
returns the matplotlib ``Figure`` and saves it too when ``path`` is given. Figures are drawn
without pyplot, so none stays open and a notebook's backend is left as it was. Panels are
laid out in a grid of at most ``COLUMNS`` columns, so a compare of many variants stays readable.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from raise_plugin.adversary import nearest
from raise_plugin.validation import read_trace
from tasks import get_task

__all__ = ["COLUMNS", "DPI", "convergence_series", "plot_convergence", "adversarial_centres",
           "plot_adversarial_distributions", "new_figure", "finish_figure", "grid_shape"]

COLUMNS = 3  # panels per row: 3 keeps a saved figure under 2000 px wide
DPI = 120


def new_figure(width: float, height: float):
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches, outside pyplot's registry, laid out
    by matplotlib's constrained layout (titles, legends and colour bars kept clear of each other)."""
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), layout="constrained")


def finish_figure(fig, path: str | Path | None):
    """Save ``fig`` to ``path`` (a PNG at ``DPI``) when given, and return it."""
    if path is not None:
        fig.savefig(path, dpi=DPI)
    return fig


def grid_shape(panels: int, columns: int = COLUMNS) -> tuple[int, int]:
    """``(rows, columns)`` of a grid holding ``panels`` panels, at most ``columns`` a row."""
    cols = max(1, min(columns, panels))
    return max(1, math.ceil(panels / cols)), cols


def convergence_series(log) -> dict:
    """Per generation: best and mean population robust metric (-score), the generations where the
    set was refreshed, and the validation trace of the best program (``raise_plugin.validation``)."""
    gens, best, mean = [], [], []
    for pop in log.populations:
        scores = [m["score"] for m in pop["members"] if m.get("score") is not None and math.isfinite(m["score"])]
        if not scores:
            continue
        gens.append(pop["generation"])
        best.append(-max(scores))
        mean.append(-float(np.mean(scores)))
    refreshes = sorted({r["generation"] for r in log.instances.values()
                        if r.get("origin") == "adversarial" and r.get("generation") is not None})
    trace = read_trace(log.path) if getattr(log, "path", None) is not None else []
    points = [p for p in trace if p.get("validation_metric") is not None]
    baseline = next((p["best_baseline"] for p in points if p.get("best_baseline")), None)
    return {"generation": gens, "best": best, "mean": mean, "refreshes": refreshes,
            "trace_generation": [p["generation"] for p in points],
            "validation": [p["validation_metric"] for p in points],
            "nominal": [p.get("nominal_metric") for p in points],
            "baseline": baseline}


def plot_convergence(runs: dict, path: str | Path | None = None):
    """One panel per run (label -> RunLog), in a grid: the best and mean robust metric per
    generation with the refreshes marked and, where the run traced it, the best program's
    nominal and validation metric beside the best baseline's validation metric: a validation
    curve that rises while the robust one falls is a run that has started to overfit.

    Returns the ``Figure`` (saved to ``path`` when given).
    """
    from matplotlib.ticker import MaxNLocator
    if not runs:
        raise ValueError("plot_convergence: no runs to draw")
    rows, cols = grid_shape(len(runs))
    fig = new_figure(5.2 * cols, 3.8 * rows)
    for k, (label, log) in enumerate(runs.items()):
        ax = fig.add_subplot(rows, cols, k + 1)
        s = convergence_series(log)
        ax.plot(s["generation"], s["best"], marker=".", label="best, robust metric")
        ax.plot(s["generation"], s["mean"], marker=".", alpha=0.6, label="population mean")
        if s["validation"]:
            ax.plot(s["trace_generation"], s["validation"], marker="s", color="darkgreen",
                    label="best, validation metric")
            nominal = [(g, v) for g, v in zip(s["trace_generation"], s["nominal"]) if v is not None]
            if nominal:
                ax.plot(*zip(*nominal), marker="^", ls=":", color="gray", label="best, nominal metric")
            if s["baseline"]:
                ax.axhline(s["baseline"]["metric"], color="darkgreen", ls=":", lw=1,
                           label=f"{s['baseline']['name']}, validation")
        for i, g in enumerate(s["refreshes"]):
            ax.axvline(g, color="crimson", ls="--", lw=0.8, label="adversarial refresh" if i == 0 else None)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("metric (lower is better)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return finish_figure(fig, path)


def adversarial_centres(task, log) -> tuple[np.ndarray, list[tuple[int, np.ndarray, int, float]]]:
    """The run's nominal histograms, and per adversarial distribution found (by generation):
    ``(generation, distribution, index of its nearest nominal histogram, distance d to it)``.
    The nearest nominal histogram is the centre of the eps-ball the distribution was projected
    onto, so ``d`` is what eps bounds."""
    nominal = np.array([task.histogram(log.instance(i)) for i, r in log.instances.items()
                        if r.get("origin") == "nominal"])
    found = []
    for gen, iid in sorted(((r.get("generation") or 0, i) for i, r in log.instances.items()
                            if r.get("origin") == "adversarial")):
        # the distribution the adversary chose (the instance is one draw from it)
        p = np.asarray(log.instances[iid].get("distribution") or task.histogram(log.instance(iid)), float)
        if len(nominal):
            index, d = nearest(p, nominal)
            found.append((gen, p, index, d))
    return nominal, found


def _task_of(runs: dict, task):
    """The task given (an object or a name), else the one every run recorded."""
    if task is not None:
        return get_task(task) if isinstance(task, str) else task
    names = {log.config.get("task") for log in runs.values()}
    if len(names) != 1 or None in names:
        raise ValueError(f"plot_adversarial_distributions: the runs record tasks {sorted(map(str, names))}; "
                         f"name one with task=")
    return get_task(names.pop())


LEGEND_ENTRIES = 5  # beyond this many distributions in a panel, a colour bar says the generation


def plot_adversarial_distributions(runs: dict, path: str | Path | None = None, *, task=None):
    """Every adversarial distribution a run (label -> RunLog) found beside its nearest nominal
    histogram, the centre of the eps-ball it was projected onto (not the mean of the nominal
    histograms, from which even a distribution at eps 0.002 can lie far). Per run, two panels
    one above the other: the last distribution found and its centre; each distribution minus its
    centre, cell by cell of the task's shift dimension (coloured by generation), with its distance
    d to the centre. Runs that found none (plain runs) get no panels; the title names them.

    ``task``: a task or its name (default: the one the runs recorded). Returns the ``Figure``
    (saved to ``path`` when given).
    """
    if not runs:
        raise ValueError("plot_adversarial_distributions: no runs to draw")
    task = _task_of(runs, task)
    drawn = {label: adversarial_centres(task, log) for label, log in runs.items()}
    shown = {label: found for label, found in drawn.items() if found[1]}
    left_out = [label for label in runs if label not in shown]
    blocks, cols = grid_shape(len(shown) or 1)
    fig = new_figure(5.6 * cols, 3.3 * 2 * blocks + 0.4 if shown else 4.6)
    axis = f"{task.shift.name} (cell of {task.shift.cells})"
    if not shown:  # nothing found anywhere: the nominal histograms, so the one panel is not empty
        ax = fig.add_subplot(1, 1, 1)
        nominal = next(iter(drawn.values()))[0]
        ax.bar(np.arange(task.shift.cells), nominal.mean(axis=0), width=1.0, color="lightgray",
               label="nominal histograms, mean")
        ax.set_xlabel(axis)
        ax.set_ylabel("probability")
        ax.legend(fontsize=8)
    for k, (label, (nominal, found)) in enumerate(shown.items()):
        block, column = divmod(k, cols)
        top = fig.add_subplot(2 * blocks, cols, 2 * block * cols + column + 1)
        bottom = fig.add_subplot(2 * blocks, cols, (2 * block + 1) * cols + column + 1, sharex=top)
        _draw_run(fig, top, bottom, nominal, found, task.shift.cells)
        top.set_title(label, fontsize=10)
        bottom.set_xlabel(axis)
    title = f"Adversarial distributions found, on {task.name}'s {task.shift.name}"
    if left_out:
        title += "\n" + textwrap.fill("left out, no adversarial distribution found (plain runs, or no refresh "
                                      "yet): " + ", ".join(left_out), width=int(13 * 5.6 * cols))
    fig.suptitle(title, fontsize=10)
    return finish_figure(fig, path)


def _draw_run(fig, top, bottom, nominal: np.ndarray, found: list, cells: int) -> None:
    """One run's two panels: the last distribution against its centre; every one minus its centre."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    x = np.arange(cells)
    cmap = colormaps["viridis"]
    generations = [gen for gen, *_ in found]
    norm = Normalize(min(generations), max(max(generations), min(generations) + 1))
    legend = len(found) <= LEGEND_ENTRIES
    for gen, p, centre_index, d in found:
        bottom.step(x, p - nominal[centre_index], where="mid", color=cmap(norm(gen)), lw=1.0,
                    label=f"generation {gen}: d = {d:.3g} to nominal {centre_index + 1}" if legend else None)
    gen, p, centre_index, d = found[-1]
    top.bar(x, nominal[centre_index], width=1.0, color="lightgray",
            label=f"nearest nominal (no. {centre_index + 1}), the ball's centre")
    top.step(x, p, where="mid", color=cmap(norm(gen)), lw=1.2, label=f"found at generation {gen}, d = {d:.3g}")
    top.set_ylabel("probability")
    top.legend(fontsize=7)
    bottom.axhline(0.0, color="gray", lw=0.8)
    bottom.set_ylabel("found − nearest nominal")
    if legend:
        bottom.legend(fontsize=7)
    else:
        bar = fig.colorbar(ScalarMappable(norm, cmap), ax=[top, bottom])  # both panels keep one width
        bar.set_label(f"generation ({len(found)} found, d ≤ {max(f[3] for f in found):.3g})", fontsize=8)
