"""The paper's figures from run directories: convergence and adversarial distributions."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from raise_plugin.adversary import nearest
from raise_plugin.validation import read_trace

__all__ = ["convergence_series", "plot_convergence", "adversarial_centres", "plot_adversarial_distributions"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


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


def plot_convergence(runs: dict, path: str | Path) -> list[str]:
    """One panel per run (label -> RunLog): the best and mean robust metric per generation with the
    refreshes marked and, where the run traced it, the best program's nominal and validation
    metric beside the best baseline's validation metric: a validation curve that rises while
    the robust one falls is a run that has started to overfit.

    Returns the labels of the series drawn.
    """
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator
    n = max(1, len(runs))
    fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 3.8), squeeze=False)
    labels = []
    for ax, (label, log) in zip(axes[0], runs.items()):
        s = convergence_series(log)
        ax.plot(s["generation"], s["best"], marker=".", label="best, robust metric")
        ax.plot(s["generation"], s["mean"], marker=".", alpha=0.6, label="population mean")
        labels += [f"{label}: best", f"{label}: mean"]
        if s["validation"]:
            ax.plot(s["trace_generation"], s["validation"], marker="s", color="darkgreen",
                    label="best, validation metric")
            nominal = [(g, v) for g, v in zip(s["trace_generation"], s["nominal"]) if v is not None]
            if nominal:
                ax.plot(*zip(*nominal), marker="^", ls=":", color="gray", label="best, nominal metric")
            if s["baseline"]:
                ax.axhline(s["baseline"]["metric"], color="darkgreen", ls=":", lw=1,
                           label=f"{s['baseline']['name']}, validation")
            labels.append(f"{label}: validation")
        for i, g in enumerate(s["refreshes"]):
            ax.axvline(g, color="crimson", ls="--", lw=0.8, label="adversarial refresh" if i == 0 else None)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("generation")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("metric (lower is better)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return labels


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


def plot_adversarial_distributions(task, runs: dict, path: str | Path) -> int:
    """Every adversarial distribution a run found beside its nearest nominal histogram, the centre
    of the eps-ball it was projected onto (not the mean of the nominal histograms, from which even
    a distribution at eps 0.002 can lie far). Top row: the last distribution found and its centre;
    bottom row: each distribution minus its centre, cell by cell (coloured by generation), with
    its distance d to the centre in the legend.

    Returns the number of adversarial distributions drawn.
    """
    plt = _pyplot()
    n = max(1, len(runs))
    fig, axes = plt.subplots(2, n, figsize=(5.6 * n, 6.4), squeeze=False, sharex="col")
    drawn = 0
    cells = np.arange(task.shift.cells)
    for column, (label, log) in enumerate(runs.items()):
        top, bottom = axes[0][column], axes[1][column]
        nominal, adversarial = adversarial_centres(task, log)
        cmap = plt.get_cmap("viridis")
        for k, (gen, found, centre_index, d) in enumerate(adversarial):
            centre = nominal[centre_index]
            colour = cmap(k / max(1, len(adversarial) - 1))
            bottom.step(cells, found - centre, where="mid", color=colour, lw=1.0,
                        label=f"generation {gen}: d = {d:.3g} to nominal {centre_index + 1}")
            if k == len(adversarial) - 1:
                top.bar(cells, centre, width=1.0, color="lightgray",
                        label=f"nearest nominal (no. {centre_index + 1}), the ball's centre")
                top.step(cells, found, where="mid", color=colour, lw=1.2,
                         label=f"found at generation {gen}, d = {d:.3g}")
            drawn += 1
        if not adversarial and len(nominal):
            top.bar(cells, nominal[0], width=1.0, color="lightgray", label="nominal no. 1 (no adversarial instance)")
        top.set_title(label, fontsize=10)
        top.set_ylabel("probability")
        bottom.axhline(0.0, color="gray", lw=0.8)
        bottom.set_xlabel(f"{task.shift.name} cell (K={task.shift.cells})")
        bottom.set_ylabel("found − nearest nominal")
        for ax in (top, bottom):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn
