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
from raise_plugin.harness.figure_style import SEQUENTIAL, legend_below, metric_axis_label, series_style
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
    """Save ``fig`` to ``path`` (its suffix the format: a PNG at ``DPI``, a PDF or SVG as vectors) when
    given, and return it."""
    if path is not None:
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
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


def _band(xs_per_seed: list, ys_per_seed: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The generations every seed reached, and there the mean, the lowest and highest over seeds."""
    common = sorted(set.intersection(*(set(x) for x in xs_per_seed))) if xs_per_seed else []
    values = np.array([[dict(zip(x, y))[g] for g in common] for x, y in zip(xs_per_seed, ys_per_seed)], float)
    if not common:
        empty = np.array([])
        return empty, empty, empty, empty, 0
    return np.array(common), values.mean(axis=0), values.min(axis=0), values.max(axis=0), len(values)


def plot_convergence(runs: dict, path: str | Path | None = None, *, task=None):
    """Every variant in one figure: ``runs`` maps a label to its runs (a ``RunLog`` or a list of them,
    one per seed). Each curve is the mean over seeds with a band from the lowest to the highest seed.

    Left: the best program's metric on the validation suite per generation, where the runs traced it
    (comparable across variants: every variant is measured on the same suite), with the best
    baseline's there. Right: the best program's metric on the set each run trained on (a plain run's
    nominal set; a RAISE run's nominal set grown by adversarial instances, so its robust metric).
    Plain runs solid, RAISE runs dashed; one colour per method. Returns the ``Figure``.
    """
    from matplotlib.ticker import MaxNLocator
    if not runs:
        raise ValueError("plot_convergence: no runs to draw")
    runs = {label: (logs if isinstance(logs, (list, tuple)) else [logs]) for label, logs in runs.items()}
    task = _task_of({f"{k}{i}": log for k, logs in runs.items() for i, log in enumerate(logs)}, task)
    series = {label: [convergence_series(log) for log in logs] for label, logs in runs.items()}
    traced = any(s["validation"] for per_seed in series.values() for s in per_seed)
    fig = new_figure(11.0 if traced else 6.4, 4.6)
    axes = [fig.add_subplot(1, 2 if traced else 1, k + 1) for k in range(2 if traced else 1)]
    seeds = sorted({len(v) for v in series.values()})
    methods = list(dict.fromkeys(_method_of(label) for label in series))
    for label, per_seed in series.items():
        style = series_style(methods.index(_method_of(label)), dashed=label.startswith("RAISE"))
        panels = [("trace_generation", "validation", axes[0])] if traced else []
        panels.append(("generation", "best", axes[-1]))
        for x_key, y_key, ax in panels:
            with_data = [s for s in per_seed if s[y_key]]
            x, mean, low, high, n = _band([s[x_key] for s in with_data], [s[y_key] for s in with_data])
            if not n:
                continue
            ax.plot(x, mean, label=label, **style)
            if n > 1:
                ax.fill_between(x, low, high, color=style["color"], alpha=0.15, linewidth=0)
    if traced:
        baseline = next((s["baseline"] for per_seed in series.values() for s in per_seed if s["baseline"]), None)
        if baseline:
            axes[0].axhline(baseline["metric"], color="gray", ls=":", lw=1.2,
                            label=f"{baseline['name']} (best baseline on the validation suite)")
        axes[0].set_title("best program on the validation suite", fontsize=10)
    axes[-1].set_title("best program on the set it trained on\n(plain: nominal set; RAISE: nominal + adversarial)",
                       fontsize=10)
    for ax in axes:
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(metric_axis_label(task), fontsize=9)
        ax.grid(alpha=0.3)
    n = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]} to {seeds[-1]}"
    band = ("mean over seeds, band from the lowest to the highest seed" if max(seeds) > 1 else "one seed")
    fig.suptitle(f"Convergence on {task.name}: {n} seed{'s' if max(seeds) > 1 else ''} per variant ({band})",
                 fontsize=11)
    legend_below(fig, axes)
    return finish_figure(fig, path)


def _method_of(label: str) -> str:
    """``"RAISE-EoH (eps=0.002)"`` -> ``"EoH"``: plain and RAISE runs of one method share a colour."""
    return label.removeprefix("RAISE-").split(" (")[0].split(", seed")[0].split(" w/")[0]


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
    from matplotlib.ticker import MaxNLocator
    if not runs:
        raise ValueError("plot_adversarial_distributions: no runs to draw")
    task = _task_of(runs, task)
    drawn = {label: adversarial_centres(task, log) for label, log in runs.items()}
    shown = {label: found for label, found in drawn.items() if found[1]}
    left_out = [label for label in runs if label not in shown]
    blocks, cols = grid_shape(len(shown) or 1)
    fig = new_figure(5.6 * cols, 3.3 * 2 * blocks + 0.4 if shown else 4.6)
    x, axis = _shift_axis(task, next(iter(runs.values())))
    if not shown:  # nothing found anywhere: the nominal histograms, so the one panel is not empty
        ax = fig.add_subplot(1, 1, 1)
        nominal = next(iter(drawn.values()))[0]
        ax.bar(x, nominal.mean(axis=0), width=x[1] - x[0] if len(x) > 1 else 1.0, color="lightgray",
               label="nominal histograms, mean")
        ax.set_xlabel(axis)
        ax.set_ylabel("probability")
        ax.legend(fontsize=8)
    for k, (label, (nominal, found)) in enumerate(shown.items()):
        block, column = divmod(k, cols)
        top = fig.add_subplot(2 * blocks, cols, 2 * block * cols + column + 1)
        bottom = fig.add_subplot(2 * blocks, cols, (2 * block + 1) * cols + column + 1, sharex=top)
        _draw_run(fig, top, bottom, nominal, found, x)
        top.set_title(label, fontsize=10)
        bottom.set_xlabel(axis)
        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))  # the shift dimension's values are integers
    title = textwrap.fill(f"Distributions of {task.shift.name} the adversary found on {task.name}, each against "
                          "its nearest nominal histogram", width=int(13 * 5.6 * cols))
    if left_out:
        title += "\n" + textwrap.fill("Not shown (they found none: plain runs, or no refresh yet): "
                                      + ", ".join(left_out), width=int(13 * 5.6 * cols))
    fig.suptitle(title, fontsize=10)
    return finish_figure(fig, path)


def _shift_axis(task, log) -> tuple[np.ndarray, str]:
    """The centre of every cell of the task's shift dimension in its own units, and the axis label;
    the cell index when no nominal instance says the dimension's range."""
    shift = task.shift
    try:
        first = next(i for i, r in log.instances.items() if r.get("origin") == "nominal")
        high = int(task.shift_values(log.instance(first))[1])
    except Exception:  # noqa: BLE001 - a run without a readable instance: cells it is
        return np.arange(shift.cells), f"{shift.name} (cell index, {shift.cells} cells)"
    width = (high - shift.low + 1) / shift.cells
    return shift.low - 0.5 + width * (np.arange(shift.cells) + 0.5), f"{shift.name} ({shift.low} to {high})"


def _draw_run(fig, top, bottom, nominal: np.ndarray, found: list, x: np.ndarray) -> None:
    """One run's two panels: the last distribution against its centre; every one minus its centre."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    viridis = colormaps[SEQUENTIAL]
    cmap = lambda v: viridis(0.85 * v)  # noqa: E731 - viridis without its faint yellow end, which does not print
    generations = [gen for gen, *_ in found]
    norm = Normalize(min(generations), max(max(generations), min(generations) + 1))
    legend = len(found) <= LEGEND_ENTRIES
    for gen, p, centre_index, d in found:
        bottom.step(x, p - nominal[centre_index], where="mid", color=cmap(norm(gen)), lw=1.0,
                    label=f"generation {gen}: d = {d:.3g} to nominal {centre_index + 1}" if legend else None)
    gen, p, centre_index, d = found[-1]
    top.bar(x, nominal[centre_index], width=x[1] - x[0] if len(x) > 1 else 1.0, color="lightgray",
            label=f"nearest nominal (no. {centre_index + 1}), the ball's centre")
    top.step(x, p, where="mid", color=cmap(norm(gen)), lw=1.2, label=f"found at generation {gen}, d = {d:.3g}")
    top.set_ylabel("probability")
    top.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.08), ncols=1, frameon=False)  # above the data
    bottom.axhline(0.0, color="gray", lw=0.8)
    bottom.set_ylabel("found − nearest nominal")
    if legend:
        bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        from matplotlib.colors import ListedColormap
        bar = fig.colorbar(ScalarMappable(norm, ListedColormap([cmap(v) for v in np.linspace(0, 1, 64)])),
                           ax=[top, bottom])  # both panels keep one width
        bar.set_label(f"generation ({len(found)} found, d ≤ {max(f[3] for f in found):.3g})", fontsize=8)
