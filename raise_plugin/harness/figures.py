"""The paper's figures from run directories: convergence and adversarial distributions."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["convergence_series", "plot_convergence", "plot_adversarial_distributions"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def convergence_series(log) -> dict:
    """Per generation: best and mean population robust metric (-score), the generations where the
    set was refreshed, and the validation trace of the best program (``raise_plugin.validation``)."""
    from raise_plugin.validation import read_trace

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


def plot_adversarial_distributions(task, runs: dict, path: str | Path) -> int:
    """Nominal mean histogram against every adversarial distribution found (coloured by generation).

    Returns the number of adversarial histograms drawn.
    """
    plt = _pyplot()
    n = max(1, len(runs))
    fig, axes = plt.subplots(1, n, figsize=(5.6 * n, 3.8), squeeze=False)
    drawn = 0
    for ax, (label, log) in zip(axes[0], runs.items()):
        nominal = [task.histogram(log.instance(i)) for i, r in log.instances.items() if r.get("origin") == "nominal"]
        cells = np.arange(task.shift.cells)
        if nominal:
            ax.bar(cells, np.mean(nominal, axis=0), width=1.0, color="lightgray", label="nominal (mean)")
        adversarial = sorted(((r.get("generation") or 0, i) for i, r in log.instances.items()
                              if r.get("origin") == "adversarial"))
        cmap = plt.get_cmap("viridis")
        for k, (gen, iid) in enumerate(adversarial):
            colour = cmap(k / max(1, len(adversarial) - 1))
            record = log.instances[iid]
            # the distribution the adversary chose (the instance is one draw from it)
            found = record.get("distribution") or task.histogram(log.instance(iid))
            ax.step(cells, found, where="mid", color=colour, lw=1.0,
                    label=f"found at generation {gen}" if k in (0, len(adversarial) - 1) else None)
            drawn += 1
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(f"{task.shift.name} cell (K={task.shift.cells})")
        ax.set_ylabel("probability")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn
