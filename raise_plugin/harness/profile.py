"""Robustness profile: the worst metric the adversary finds within eps, for growing eps.

For every heuristic, eps and seed one adversarial search runs (in parallel worker
processes); the profile reports the nominal mean and, per eps, the mean and spread
over seeds of the worst metric found, and keeps the worst distribution of each eps.
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing as mp
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from raise_plugin.harness.selection import selects_on
from raise_plugin.harness.suite_eval import Heuristic, default_workers
from tasks import get_task
from tasks.common.errors import HeuristicError

__all__ = ["ProfilePoint", "Profile", "robustness_profile", "plot_profile", "plot_worst_distributions"]


@dataclass
class ProfilePoint:
    heuristic: str
    epsilon: float
    seed: int
    metric: float
    distance: float
    distribution: list[float] = field(repr=False)
    reason: str = ""


@dataclass
class Profile:
    task: str
    epsilons: list[float]
    seeds: list[int]
    nominal: dict[str, float]              # heuristic -> mean metric on the nominal set
    points: list[ProfilePoint]
    nominal_histogram: list[float] = field(repr=False, default_factory=list)

    def heuristics(self) -> list[str]:
        return list(self.nominal)

    def worst(self, heuristic: str, epsilon: float) -> np.ndarray:
        return np.array([p.metric for p in self.points if p.heuristic == heuristic and p.epsilon == epsilon])

    def summary(self, heuristic: str, epsilon: float) -> tuple[float, float]:
        w = self.worst(heuristic, epsilon)
        return float(np.mean(w)), float(np.std(w))

    def worst_distribution(self, heuristic: str, epsilon: float) -> np.ndarray:
        pts = [p for p in self.points if p.heuristic == heuristic and p.epsilon == epsilon]
        return np.asarray(max(pts, key=lambda p: p.metric).distribution)

    def markdown(self) -> str:
        names = self.heuristics()
        lines = ["| eps | " + " | ".join(names) + " |", "|---|" + "|".join("---:" for _ in names) + "|",
                 "| nominal | " + " | ".join(f"{self.nominal[h]:.3f}" for h in names) + " |"]
        for e in self.epsilons:
            cells = []
            for h in names:
                m, s = self.summary(h, e)
                cells.append(f"{m:.3f} ± {s:.3f}" if len(self.seeds) > 1 else f"{m:.3f}")
            lines.append(f"| {e:g} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"task": self.task, "epsilons": self.epsilons, "seeds": self.seeds, "nominal": self.nominal,
                "nominal_histogram": self.nominal_histogram,
                "points": [p.__dict__ for p in self.points]}


def _search_one(task_name: str, heuristic: Heuristic, epsilon: float, seed: int, population: int,
                generations: int, switches: dict) -> ProfilePoint:
    from raise_plugin.adversary import search
    task = get_task(task_name)
    priority = heuristic.resolve(task)
    result = search(task, priority, epsilon, seed=seed, population=population, generations=generations, **switches)
    reason = getattr(result, "reason", "") or ""
    return ProfilePoint(heuristic.name, float(epsilon), int(seed), float(result.metric), float(result.distance),
                        np.asarray(result.distribution, dtype=float).tolist(), reason)


def _nominal_mean(task_name: str, heuristic: Heuristic) -> float:
    task = get_task(task_name)
    priority = heuristic.resolve(task)
    try:
        return float(np.mean([task.evaluate(priority, inst) for inst in task.nominal_instances()]))
    except HeuristicError:
        return float("nan")


@selects_on("nominal")  # compares heuristics around the nominal set
def robustness_profile(task_name: str, heuristics: list[Heuristic], epsilons: list[float], seeds: list[int], *,
                       population: int = 8, generations: int = 4, workers: int | None = None,
                       progress: bool = True, **switches) -> Profile:
    """Run the adversary for every (heuristic, eps, seed); deterministic under the seeds."""
    task = get_task(task_name)
    jobs = [(h, e, s) for h in heuristics for e in epsilons for s in seeds]
    workers = default_workers() if workers is None else max(1, workers)
    bar = tqdm(total=len(jobs) + len(heuristics), desc=f"profiling on {task_name}", unit="search",
               disable=not progress, leave=False)
    points: list[ProfilePoint | None] = [None] * len(jobs)
    nominal: dict[str, float] = {}
    context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        nominal_futures = {pool.submit(_nominal_mean, task_name, h): h.name for h in heuristics}
        futures = {pool.submit(_search_one, task_name, h, e, s, population, generations, switches): j
                   for j, (h, e, s) in enumerate(jobs)}
        for fut in cf.as_completed(list(nominal_futures) + list(futures)):
            if fut in nominal_futures:
                nominal[nominal_futures[fut]] = fut.result()
            else:
                points[futures[fut]] = fut.result()
            bar.update()
    bar.close()
    ordered = {h.name: nominal[h.name] for h in heuristics}
    p_bar = np.mean([task.histogram(inst) for inst in task.nominal_instances()], axis=0)
    return Profile(task_name, list(epsilons), list(seeds), ordered, points, p_bar.tolist())


def plot_profile(profile: Profile, path: str | Path) -> list[str]:
    """Worst metric found versus eps, one series per heuristic (nominal mean at eps = 0).

    Returns the labels of the series drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for h in profile.heuristics():
        xs = [0.0] + profile.epsilons
        stats = [profile.summary(h, e) for e in profile.epsilons]
        ys = [profile.nominal[h]] + [m for m, _ in stats]
        err = [0.0] + [s for _, s in stats]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=h)
    ax.set_xlabel("eps (radius of the ball around the nominal distributions)")
    ax.set_ylabel(f"worst {profile.task} metric found (lower is better)")
    ax.set_title(f"Robustness profile on {profile.task} ({len(profile.seeds)} seeds)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [text.get_text() for text in ax.get_legend().get_texts()]


def plot_worst_distributions(profile: Profile, heuristic: str, path: str | Path) -> None:
    """The worst distribution found at each eps against the mean nominal histogram."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    cells = np.arange(len(profile.nominal_histogram))
    ax.bar(cells, profile.nominal_histogram, width=1.0, color="lightgray", label="nominal (mean)")
    for e in profile.epsilons:
        ax.step(cells, profile.worst_distribution(heuristic, e), where="mid", label=f"worst at eps={e:g}")
    ax.set_xlabel("cell of the shift dimension")
    ax.set_ylabel("probability")
    ax.set_title(f"{heuristic}: worst distributions found on {profile.task}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def save_profile(profile: Profile, out: str | Path) -> list[Path]:
    """profile.json, profile.md, profile.png and one worst-distribution PNG per heuristic."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "profile.json", out / "profile.md", out / "profile.png"]
    (out / "profile.json").write_text(json.dumps(profile.to_json(), indent=1))
    (out / "profile.md").write_text(
        f"# Robustness profile on {profile.task}\n\nWorst metric found by the adversary within eps "
        f"(mean ± std over seeds {profile.seeds}); lower is better.\n\n{profile.markdown()}\n")
    plot_profile(profile, out / "profile.png")
    for h in profile.heuristics():
        path = out / f"worst_distributions_{_slug(h)}.png"
        plot_worst_distributions(profile, h, path)
        written.append(path)
    return written


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
