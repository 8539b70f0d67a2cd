"""The paper's figures from run directories: convergence and adversarial distributions.

Every figure function takes what it draws first (the runs, a profile), ``path=None`` next,
returns the matplotlib ``Figure`` and saves it too when ``path`` is given. Figures are drawn
without pyplot, so none stays open and a notebook's backend is left as it was. Panels are
laid out in a grid of at most ``COLUMNS`` columns, so a compare of many variants stays readable.
"""
from __future__ import annotations

import math
import os
import re
import textwrap
from pathlib import Path

import numpy as np

from raise_plugin.adversary import nearest
from raise_plugin.durable import unwritable
from raise_plugin.errors import BadArgument, BadArgumentType, UserError
from raise_plugin.harness.figure_style import (band_style, legend_below, metric_axis_label, sequential_colour,
                                                series_style)
from raise_plugin.harness.run_metric import trained_metric
from raise_plugin.rundir.reader import RunLog
from raise_plugin.validation import read_trace, reference_words
from tasks import Task, get_task, list_tasks

__all__ = ["COLUMNS", "DPI", "check_figure_path", "convergence_series", "plot_convergence", "adversarial_centres",
           "plot_adversarial_distributions", "shift_axis", "new_figure", "finish_figure", "grid_shape", "wrap_words"]

COLUMNS = 3  # panels per row: 3 keeps a saved figure under 2000 px wide
DPI = 120


def new_figure(width: float, height: float):
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches, outside pyplot's registry, laid out
    by matplotlib's constrained layout (titles, legends and colour bars kept clear of each other)."""
    from matplotlib.figure import Figure
    return Figure(figsize=(width, height), layout="constrained")


def finish_figure(fig, path: str | Path | None):
    """Save ``fig`` to ``path`` (its suffix the format: a PNG at ``DPI``, a PDF or SVG as vectors) when
    given, making the folders on the way, and return it."""
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return fig


def check_figure_path(function: str, path) -> None:
    """A one-line ``UserError`` unless ``path`` is ``None`` or a file a figure can be saved to (a path
    whose suffix, if any, is a format matplotlib writes, in a place a file can be written): said
    before anything is drawn."""
    from matplotlib.backend_bases import FigureCanvasBase
    if path is None:
        return
    if not isinstance(path, (str, os.PathLike)):
        raise BadArgumentType(f"{function}: path: give the file to save the figure to, got {type(path).__name__} "
                              f"{path!r:.40}")
    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix[1:].lower()
    why = (f"a .{suffix} file is no figure format ({', '.join(sorted(formats))})" if suffix and suffix not in formats
           else unwritable(path))
    if why:
        raise BadArgument(f"{function}: path {str(path)!r}: {why}")


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
    one per seed). Each curve is the mean over seeds with a band from the lowest to the highest seed,
    at the generations every seed reached.

    Left: the best program's metric on the validation suite per generation, where the runs traced it
    (comparable across variants: every variant is measured on the same suite), with the best
    baseline's there. Right: the best program's metric on the set each run trained on (a plain run's
    nominal set; a RAISE run's nominal set grown by adversarial instances, so its robust metric), in the
    terms its aggregation takes the metric (``run_metric.trained_metric``: a worst case, a regret).
    Each variant its own colour and marker; plain runs solid with filled markers, RAISE runs dashed
    with open ones (``figure_style.series_style``). Returns the ``Figure``.
    """
    from matplotlib.ticker import MaxNLocator
    check_figure_path("plot_convergence", path)
    runs = run_logs(runs, "plot_convergence", per_seed=True)
    task = _task_of({f"{k}{i}": log for k, logs in runs.items() for i, log in enumerate(logs)}, task,
                    "plot_convergence")
    series = {label: [convergence_series(log) for log in logs] for label, logs in runs.items()}
    traced = any(s["validation"] for per_seed in series.values() for s in per_seed)
    fig = new_figure(11.0 if traced else 6.4, 4.8)
    axes = [fig.add_subplot(1, 2 if traced else 1, k + 1) for k in range(2 if traced else 1)]
    seeds = sorted({len(v) for v in series.values()})
    for index, (label, per_seed) in enumerate(series.items()):
        style = series_style(index, dashed=label.startswith("RAISE"))
        panels = [("trace_generation", "validation", axes[0])] if traced else []
        panels.append(("generation", "best", axes[-1]))
        for x_key, y_key, ax in panels:
            with_data = [s for s in per_seed if s[y_key]]
            x, mean, low, high, n = _band([s[x_key] for s in with_data], [s[y_key] for s in with_data])
            if not n:
                continue
            ax.plot(x, mean, label=label, **style)
            if n > 1:
                ax.fill_between(x, low, high, **band_style(style))
    if traced:
        baseline = next((s["baseline"] for per_seed in series.values() for s in per_seed if s["baseline"]), None)
        if baseline:
            axes[0].axhline(baseline["metric"], color="dimgray", ls=":", lw=1.4,
                            label=f"{baseline['name']} ({reference_words(task, baseline['name'])})")
        axes[0].set_title("best program on the validation suite", fontsize=10)
    axes[-1].set_title("best program on the set it trained on\n(plain: nominal set; RAISE: nominal + adversarial)",
                       fontsize=10)
    # the set a run trained on is scored by its aggregation (a regret, a worst case), the validation suite by the mean
    trained = dict.fromkeys(trained_metric(log.config) for logs in runs.values() for log in logs)
    for ax, label in zip(axes, [metric_axis_label(task)] * traced + [f"{' / '.join(trained)}, lower is better"]):
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # one generation: one tick, not 1.925
        ax.set_ylabel(textwrap.fill(label, 48), fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Convergence on {task.name}, {_seed_caption(seeds)}", fontsize=11)
    legend_below(fig, axes)
    return finish_figure(fig, path)


def _seed_caption(seeds: list[int]) -> str:
    """What a curve and its band are, in words that match ``_band``: the mean and the range over seeds."""
    count = f"{seeds[0]}" if len(seeds) == 1 else f"{seeds[0]} to {seeds[-1]}"
    if seeds[-1] == 1:
        return "1 seed per variant\nline: that seed's value (one seed, so no band)"
    where = "generations every seed reached" + ("; no band for a variant of 1 seed" if seeds[0] == 1 else "")
    return f"{count} seeds per variant\nline: mean over seeds; band: lowest to highest seed ({where})"


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


def run_logs(runs, function: str, *, per_seed: bool = False) -> dict:
    """``runs`` as label -> ``RunLog`` (``per_seed``: label -> list of them, one per seed), a run
    directory read where one is given, each label as its text (a seed's number: ``"0"``); an empty or
    other ``runs`` is a one-line ``UserError``."""
    if not isinstance(runs, dict) or not runs:
        raise UserError(f"{function}: runs maps a label to a RunLog or a run directory, got "
                        f"{'no runs' if isinstance(runs, dict) else type(runs).__name__}")
    texts = [str(label) for label in runs]
    if len(set(texts)) < len(texts):  # 0 and "0": one label of the figure's legend and title
        raise UserError(f"{function}: two runs are labelled {next(t for t in texts if texts.count(t) > 1)!r}")
    runs = {str(label): log for label, log in runs.items()}

    def read(label, log):
        if isinstance(log, (str, os.PathLike)):
            return RunLog.load(log)
        if not isinstance(log, RunLog):
            raise UserError(f"{function}: {label!r} is a {type(log).__name__}, not a RunLog or a run directory")
        return log
    if not per_seed:
        return {label: read(label, log) for label, log in runs.items()}
    empty = [label for label, logs in runs.items() if isinstance(logs, (list, tuple)) and not logs]
    if empty:
        raise UserError(f"{function}: {empty[0]!r} holds no runs: give each label a RunLog, a run directory or a "
                        f"list of them")
    return {label: [read(label, log) for log in (logs if isinstance(logs, (list, tuple)) else [logs])]
            for label, logs in runs.items()}


def _task_of(runs: dict, task, function: str):
    """The task given (an object or a name; one the runs recorded where they name a registered one), else
    the one every run recorded."""
    names = {log.config.get("task") for log in runs.values()}
    if task is not None:
        task = get_task(task) if isinstance(task, str) else task
        if not isinstance(task, Task):
            raise BadArgumentType(f"{function}: task: give a task or its name, got {type(task).__name__} "
                                  f"{task!r:.40}")
        other = sorted(n for n in names if n in list_tasks() and get_task(n).name != task.name)  # a file's: by name
        if other:
            raise UserError(f"{function}: task {task.name!r}: the runs were trained on {', '.join(other)}: leave "
                            f"task= out or name the runs' task")
        return task
    if len(names) != 1 or None in names:
        raise UserError(f"{function}: the runs record tasks {sorted(map(str, names))}; name one with task=")
    return get_task(names.pop())


LEGEND_ENTRIES = 5  # beyond this many distributions in a panel, a colour bar says the generation
NO_BREAK = "\N{NO-BREAK SPACE}"
SHIFT_TICKS = 6  # at most this many ticks on the shift axis: a 200-wide range stays legible in a narrow panel


def wrap_words(text: str, width: int, keep: str = r"\(.*?\)") -> str:
    """``text`` wrapped to ``width`` characters a line, never inside a match of the pattern ``keep``
    (by default a unit in parentheses; the profile's caption keeps each clause between semicolons)."""
    kept = re.sub(keep, lambda m: m.group().replace(" ", NO_BREAK), text)
    return "\n".join(textwrap.wrap(kept, width, break_on_hyphens=False)).replace(NO_BREAK, " ")


def plot_adversarial_distributions(runs: dict, path: str | Path | None = None, *, task=None):
    """Every adversarial distribution a run (label -> RunLog) found beside its nearest nominal
    histogram, the centre of the eps-ball it was projected onto (not the mean of the nominal
    histograms, from which even a distribution at eps 0.002 can lie far). Per run, two panels
    one above the other and a legend below them: the last distribution found and its centre; each
    distribution minus its centre, cell by cell of the task's shift dimension (coloured by
    generation, the latest darkest), with its distance d to the centre. The shift axis is in the
    dimension's own units (item sizes, durations, ...), ticked at whole values. Runs that found
    none (plain runs) get no panels; the title names them.

    ``task``: a task or its name (default: the one the runs recorded). Returns the ``Figure``
    (saved to ``path`` when given).
    """
    check_figure_path("plot_adversarial_distributions", path)
    runs = run_logs(runs, "plot_adversarial_distributions")
    task = _task_of(runs, task, "plot_adversarial_distributions")
    drawn = {label: adversarial_centres(task, log) for label, log in runs.items()}
    shown = {label: found for label, found in drawn.items() if found[1]}
    left_out = [label for label in runs if label not in shown]
    blocks, cols = grid_shape(len(shown) or 1)
    fig = new_figure(5.6 * cols, (3.0 * 2 + 1.2) * blocks + 0.6 if shown else 4.6)
    edges, axis = shift_axis(task, next(iter(runs.values())))
    if not shown:  # nothing found anywhere: the nominal histograms, so the one panel is not empty
        ax = fig.add_subplot(1, 1, 1)
        ax.stairs(next(iter(drawn.values()))[0].mean(axis=0), edges, fill=True, color="lightgray",
                  label="nominal histograms, mean")
        label_shift_axis(ax, edges, axis)
        ax.set_ylabel("probability")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the data
    blocks_of = fig.subfigures(blocks, cols, squeeze=False).flat if shown else ()
    for block, (label, (nominal, found)) in zip(blocks_of, shown.items()):
        top, bottom = block.subplots(2, 1, sharex=True)
        _draw_run(block, top, bottom, nominal, found, edges)
        top.set_title(label, fontsize=10)
        label_shift_axis(bottom, edges, axis)
    width = int(13 * 5.6 * cols)  # characters a line of the title holds
    title = [textwrap.fill(f"Adversarial distributions of {task.shift.name} on {task.name}, each against its "
                           "nearest nominal histogram (the centre of its eps-ball)", width)]
    if left_out:  # a label is not broken across lines: its spaces do not break while the line is wrapped
        title.append(textwrap.fill("Not shown, as they found none (plain runs, or no refresh yet): "
                                   + "; ".join(label.replace(" ", NO_BREAK) for label in left_out), width))
    fig.suptitle("\n".join(title).replace(NO_BREAK, " "), fontsize=10)
    return finish_figure(fig, path)


def shift_axis(task, log=None) -> tuple[np.ndarray, str]:
    """The edges of the K cells of the task's shift dimension in its own units, and the axis label: a
    whole value v spans v - 0.5 to v + 0.5, so the cells share low - 0.5 to high + 0.5 equally, as
    ``ShiftDimension.cell_of`` bins. The range is read from a nominal instance of the run, else of the
    task; the axis counts cells only when neither can be read."""
    shift = task.shift
    for instance in (lambda: _first_nominal(log), lambda: task.nominal_instances()[0]):
        try:
            high = int(task.shift_values(instance())[1])
        except Exception:  # noqa: BLE001 - a run or task without a readable instance: try the next source
            continue
        edges = shift.low - 0.5 + (high - shift.low + 1) / shift.cells * np.arange(shift.cells + 1)
        return edges, f"{shift.name} ({shift.low} to {high})"
    return np.arange(shift.cells + 1) - 0.5, f"{shift.name} (cell of {shift.cells}; its range unknown)"


def _first_nominal(log):
    """The run's first nominal instance."""
    return log.instance(next(i for i, r in log.instances.items() if r.get("origin") == "nominal"))


def label_shift_axis(ax, edges: np.ndarray, axis: str) -> None:
    """The shift dimension's name and range below ``ax``, which spans its cells, ticks at a few whole
    values of it."""
    from matplotlib.ticker import MaxNLocator
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel(axis)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=SHIFT_TICKS, integer=True, steps=[1, 2, 2.5, 5, 10]))


def _draw_run(block, top, bottom, nominal: np.ndarray, found: list, edges: np.ndarray) -> None:
    """One run's two panels and its legend below them: the last distribution against its centre; every
    one minus its centre."""
    generations = [gen for gen, *_ in found]
    first, last = min(generations), max(generations)
    colour = lambda gen: sequential_colour((last - gen) / max(last - first, 1))  # noqa: E731 - the latest darkest
    legend = len(found) <= LEGEND_ENTRIES
    gen, p, centre_index, d = found[-1]
    top.stairs(nominal[centre_index], edges, fill=True, color="lightgray",
               label=f"nearest nominal histogram (no. {centre_index + 1}), the ball's centre")
    # listed with every generation below where the legend lists them, once
    top.stairs(p, edges, color=colour(gen), lw=1.4, label=None if legend else f"found at generation {gen}, d = {d:.3g}")
    top.set_ylabel("probability")
    bottom.axhline(0.0, color="gray", lw=0.8)
    for k, (gen, p, centre_index, d) in enumerate(found, 1):
        above = " (drawn above)" if k == len(found) else ""
        bottom.stairs(p - nominal[centre_index], edges, baseline=None, color=colour(gen), lw=1.1,
                      label=f"generation {gen}{above}: d = {d:.3g} to nominal {centre_index + 1}" if legend else None)
    bottom.set_ylabel("found − nearest nominal\n(probability)")
    handles, labels = (a + b for a, b in zip(top.get_legend_handles_labels(), bottom.get_legend_handles_labels()))
    block.legend(handles, labels, loc="outside lower center", fontsize=7, frameon=False)
    if not legend:
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import ListedColormap, Normalize
        ramp = ListedColormap([colour(first + v * (last - first)) for v in np.linspace(0, 1, 64)])
        bar = block.colorbar(ScalarMappable(Normalize(first, max(last, first + 1)), ramp), ax=[top, bottom])
        bar.set_label(f"generation ({len(found)} found, d ≤ {max(f[3] for f in found):.3g})", fontsize=8)
