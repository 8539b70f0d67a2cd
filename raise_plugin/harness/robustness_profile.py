"""Robustness profile: the worst metric the adversary finds within eps, for growing eps.

For every heuristic, eps and seed one adversarial search runs (in parallel, in the
engine's sandboxed workers, under a time limit); the profile reports, per eps, the metric
of the worst instance found (its mean over seeds with the half-width of the 95 % Student-t
interval over seeds) beside the same quantity on the nominal set, its worst instance (and,
named as such, its mean), and keeps the worst distribution of each eps. A heuristic that fails on the nominal set in a way that
repeats (times out, does not compile, ...), or whose search runs out of time, is not
searched further: its remaining points are marked skipped with the reason.
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from raise_plugin.adversary import PAPER_DRAWS, nearest, search
from raise_plugin.adversary.sandboxed import search_program
from raise_plugin.engine import CallTimeout, FailureKind, ProcessExecutor, SandboxLimits, WorkerDied, default_workers
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.harness.figure_style import band_style, legend_below, metric_axis_label, series_style
from raise_plugin.errors import BadArgumentType
from raise_plugin.harness.figures import (check_figure_path, finish_figure, label_shift_axis, new_figure,
                                          shift_axis, wrap_words)
from raise_plugin.harness.stats import LEVEL, mean_half_width
from raise_plugin.progress import open_progress
from raise_plugin.selection import selects_on
from raise_plugin.settings import default
from tasks import get_task
from tasks.common.errors import UnknownName
from tasks.common.suite import Dataset

__all__ = ["ProfilePoint", "Profile", "robustness_profile", "plot_profile", "plot_worst_distributions",
           "INVALID_THERE"]


@dataclass
class ProfilePoint:
    heuristic: str
    epsilon: float
    seed: int
    metric: float
    distance: float
    distribution: list[float] = field(repr=False)
    reason: str = ""

    @property
    def skipped(self) -> bool:
        return self.reason.startswith("skipped: ")


@dataclass
class Profile:
    task: str
    epsilons: list[float]
    seeds: list[int]
    nominal: dict[str, float]              # heuristic -> mean metric on the nominal set
    points: list[ProfilePoint]
    nominal_histogram: list[float] = field(repr=False, default_factory=list)
    # heuristic -> metric on its worst nominal instance: what an eps row (one instance found) compares with
    nominal_worst: dict[str, float] = field(default_factory=dict)
    nominal_count: int = 0                  # instances in the nominal set
    shift: str = ""                        # the quantity of the task's shift dimension, e.g. "item size"
    # each nominal instance's histogram: the centres of the eps-balls the searches project onto
    nominal_histograms: list[list[float]] = field(repr=False, default_factory=list)

    def heuristics(self) -> list[str]:
        return list(self.nominal)

    def worst(self, heuristic: str, epsilon: float) -> np.ndarray:
        return np.array([p.metric for p in self._searched(heuristic, epsilon)])

    def _searched(self, heuristic: str, epsilon: float) -> list:
        """The points of ``heuristic`` at ``epsilon``; an ``UnknownName`` naming those profiled where it has none
        (a misspelt name or a radius not searched gave NaN, as if its searches had failed)."""
        if heuristic not in self.nominal or epsilon not in self.epsilons:
            shown = f"{epsilon:g}" if isinstance(epsilon, (int, float)) else repr(epsilon)
            raise UnknownName(f"the profile has no {heuristic!r} at eps {shown}; it has "
                              f"{', '.join(self.nominal)} at eps {', '.join(f'{e:g}' for e in self.epsilons)}")
        return [p for p in self.points if p.heuristic == heuristic and p.epsilon == epsilon]

    def summary(self, heuristic: str, epsilon: float) -> tuple[float, float]:
        """Mean over seeds of the worst metric found, and its sample standard deviation over seeds (the sd
        the table's ± is made from; NaN with one seed)."""
        w = self.worst(heuristic, epsilon)
        with np.errstate(invalid="ignore", divide="ignore"):  # a failed search: inf, its sd NaN; one seed: NaN
            return float(np.mean(w)), float(np.std(w, ddof=1)) if w.size > 1 else math.nan

    def half_width(self, heuristic: str, epsilon: float) -> float:
        """Half-width of the 95 % Student-t interval of that mean over seeds (NaN with one seed or a
        failed search): the ± of the profile's table, as of every table the harness writes."""
        w = self.worst(heuristic, epsilon)
        return mean_half_width(w) if w.size > 1 and np.all(np.isfinite(w)) else math.nan

    def skipped(self) -> int:
        """How many searches were not run (their heuristic had already failed in a way that repeats)."""
        return sum(p.skipped for p in self.points)

    def worst_distribution(self, heuristic: str, epsilon: float) -> np.ndarray:
        pts = [p for p in self._searched(heuristic, epsilon) if p.distribution]
        if not pts:
            return np.full(len(self.nominal_histogram), math.nan)
        return np.asarray(max(pts, key=lambda p: p.metric).distribution)

    def caption(self) -> str:
        """What the table shows: the metric (name, unit, direction), each row, and what ± is."""
        count = f" {self.nominal_count}" if self.nominal_count else ""
        seeds = (f"its mean over seeds {self.seeds} ± the half-width of its {LEVEL * 100:g} % Student-t interval "
                 "over seeds" if len(self.seeds) > 1 else f"with adversary seed {self.seeds[0]}")
        return (f"Metric: {get_task(self.task).metric_label}. Each eps row: the metric of the worst instance the "
                f"adversary found within eps, {seeds}. Compare it with the nominal set's worst instance (the "
                f"worst of its{count} instances: one instance too); the nominal mean is the mean over them.")

    def markdown(self) -> str:
        """The profile as a titled Markdown table with its caption."""
        names = self.heuristics()
        worst = [_cell(self.nominal_worst.get(h, math.nan)) if self.nominal_worst else "—" for h in names]
        lines = [f"**{self.task}: worst {get_task(self.task).metric_name} found within eps**", "", self.caption(),
                 "", "| instance | " + " | ".join(names) + " |", "|---|" + "|".join("---:" for _ in names) + "|",
                 "| nominal: mean over the set | " + " | ".join(_cell(self.nominal[h]) for h in names) + " |",
                 "| nominal: worst instance | " + " | ".join(worst) + " |"]
        for e in self.epsilons:
            cells = []
            for h in names:
                m, half = self.summary(h, e)[0], self.half_width(h, e)
                cells.append(_cell(m) + (f" ± {half:.3f}" if math.isfinite(half) else ""))
            lines.append(f"| eps={e:g}: worst instance found | " + " | ".join(cells) + " |")
        failed = self.failure_lines()
        return "\n".join(lines + ([""] + [f"- {line}" for line in failed] if failed else []))

    def failure_lines(self) -> list[str]:
        """Why a table's cells read ``invalid``: per heuristic whose searches failed, how many and the first
        reason (of a search that ran, where one did)."""
        lines, per = [], len(self.points) // max(1, len(self.nominal))
        for h in self.heuristics():
            failed = [p for p in self.points if p.heuristic == h and p.reason and not math.isfinite(p.metric)]
            if failed:
                skipped = sum(p.skipped for p in failed)
                first = next((p.reason for p in failed if not p.skipped), failed[0].reason)
                lines.append(f"{h}: {len(failed)} of {per} searches failed: {first}"
                             + (f" ({skipped} skipped)" if skipped else ""))
        return lines

    def to_json(self) -> dict:
        return {"task": self.task, "epsilons": self.epsilons, "seeds": self.seeds, "nominal": self.nominal,
                "nominal_worst": self.nominal_worst, "nominal_count": self.nominal_count,
                "nominal_histogram": self.nominal_histogram, "nominal_histograms": self.nominal_histograms,
                "shift": self.shift,
                "points": [p.__dict__ for p in self.points]}


INVALID_THERE = "invalid on the worst instance found: "  # a search's reason where it found the heuristic fail


def _cell(value: float) -> str:
    """A metric in the table: NaN (the search failed) and inf (it found where the heuristic fails) are invalid."""
    return f"{value:.3f}" if math.isfinite(value) else "invalid"


def _search_one(task_name: str, heuristic: Heuristic, epsilon: float, seed: int, inner_population: int,
                inner_generations: int, switches: dict) -> ProfilePoint:
    task = get_task(task_name)
    options = dict(switches, seed=seed, inner_population=inner_population, inner_generations=inner_generations)
    if options.get("references") == "baselines":  # regret against every baseline but the heuristic itself
        options["references"] = [(n, f) for n, f in task.baselines.items() if n != heuristic.baseline]
    if heuristic.code is None:  # a task's own rule: the task's code, run here
        result = search(task, heuristic.resolve(task), epsilon, **options)
    else:  # a program: in program processes of its own, as a run's searches meet it, never in this worker
        result = search_program(search, task, heuristic.code, options.pop("references", None) or [], epsilon, options)
    reason = ""
    if not math.isfinite(float(result.metric)):  # the search found where the heuristic fails, and why
        reason = f"{INVALID_THERE}{result.failure or 'the heuristic fails there'}"
    return ProfilePoint(heuristic.name, float(epsilon), int(seed), float(result.metric), float(result.distance),
                        np.asarray(result.distribution, dtype=float).tolist(), reason)


def search_timeout(task, inner_population: int, inner_generations: int, per_instance: float | None = None) -> float:
    """Seconds one inner search may take: the limit for one instance (default: the task's
    for an instance a little longer than the nominal ones, as the length gene reaches
    1.1 x) for every candidate of every generation, plus one generation's worth more."""
    if per_instance is None:
        per_instance = task.instance_timeout(task.nominal_instances()[0]) * 1.1 ** 2
    return per_instance * inner_population * (inner_generations + 1)


def _failed_point(heuristic: str, epsilon: float, seed: int, reason: str) -> ProfilePoint:
    return ProfilePoint(heuristic, float(epsilon), int(seed), math.nan, math.nan, [], reason)


@selects_on("nominal")  # compares heuristics around the nominal set
def robustness_profile(task_name: str, heuristics: list[Heuristic], epsilons: list[float], seeds: list[int], *,
                       inner_population: int = default("inner_population"),
                       inner_generations: int = default("inner_generations"), workers: int | None = None,
                       progress: bool | str | None = True, timeout: float | None = None, **switches) -> Profile:
    """Run the adversary for every (heuristic, eps, seed); deterministic under the seeds.

    The nominal means and the searches run in the engine's sandboxed workers; ``timeout``:
    seconds per instance (default: the task's), from which ``search_timeout`` gives the
    limit of one search. A heuristic that fails on the
    nominal set in a way that repeats, or whose search runs out of time or kills its
    worker, gets no further searches: its points are NaN with the reason (``skipped``).
    """
    task = get_task(task_name)
    workers = default_workers() if workers is None else max(1, workers)
    draws = int(switches.get("inner_draws", PAPER_DRAWS))  # the search's own R where none is given
    limit = search_timeout(task, inner_population, inner_generations, timeout) * draws
    if switches.get("references") == "baselines":  # the references run on every draw too
        limit *= 1 + len(task.baselines)
    points: list[ProfilePoint] = []
    with ProcessExecutor(workers, SandboxLimits(timeout=limit)) as pool:
        rows = evaluate_suite(task_name, heuristics, [Dataset("nominal", {}, task.nominal_instances())],
                              executor=pool, progress=False, timeout=timeout)
        nominal: dict[str, float] = {}
        nominal_worst: dict[str, float] = {}
        broken: dict[str, str] = {}
        for h in heuristics:
            mine = [r for r in rows if r.heuristic == h.name]
            valid = all(r.valid for r in mine)
            nominal[h.name] = float(np.mean([r.metric for r in mine])) if valid else math.nan
            nominal_worst[h.name] = float(np.max([r.metric for r in mine])) if valid else math.nan
            fatal = next((r for r in mine if r.kind in FailureKind.REPEATING and not r.skipped), None)
            if fatal is not None:
                broken[h.name] = f"on the nominal set: {fatal.reason}"
        jobs = [(h, e, s) for h in heuristics for e in epsilons for s in seeds]
        bar = open_progress(len(jobs), progress=progress, desc=f"profiling on {task_name}", unit="search",
                            leave=False)
        futures: dict[cf.Future, int] = {}
        slots: list[ProfilePoint | None] = [None] * len(jobs)
        for j, (h, e, s) in enumerate(jobs):
            if h.name in broken:
                slots[j] = _failed_point(h.name, e, s, f"skipped: {broken[h.name]}")
                bar.update()
            else:
                futures[pool.submit(_search_one, task_name, h, e, s, inner_population,
                                     inner_generations, switches)] = j
        for fut in cf.as_completed(futures):
            j = futures[fut]
            h, e, s = jobs[j]
            if fut.cancelled():
                continue
            try:
                slots[j] = fut.result()
            except (CallTimeout, WorkerDied) as exc:
                reason = f"the search {'timed out' if isinstance(exc, CallTimeout) else 'failed'}: {exc}"
                slots[j] = _failed_point(h.name, e, s, reason)
                if h.name not in broken:
                    broken[h.name] = reason
                    for other, k in futures.items():
                        if jobs[k][0].name == h.name and other.cancel():
                            slots[k] = _failed_point(h.name, jobs[k][1], jobs[k][2], f"skipped: {reason}")
                            bar.update()
            except Exception as exc:  # noqa: BLE001 - one search failed; the profile goes on
                slots[j] = _failed_point(h.name, e, s, f"the search raised {type(exc).__name__}: {exc}")
            bar.update()
        bar.close()
    for j, (h, e, s) in enumerate(jobs):
        if slots[j] is None:  # its future was cancelled after the heuristic's first failure
            slots[j] = _failed_point(h.name, e, s, f"skipped: {broken.get(h.name, 'not run')}")
        points.append(slots[j])
    histograms = np.array([task.histogram(inst) for inst in task.nominal_instances()], dtype=float)
    return Profile(task_name, list(epsilons), list(seeds), nominal, points, histograms.mean(axis=0).tolist(),
                   nominal_worst, len(histograms), task.shift.name, histograms.tolist())


def plot_profile(profile: Profile, path: str | Path | None = None):
    """Worst metric found versus eps, one series per heuristic: the mean over seeds with a band from the
    lowest to the highest seed (what the seeds found: a t interval of the mean reached below 0 for a
    waste ratio at two seeds); at eps = 0 the nominal set's worst instance,
    like with like. Each heuristic its own colour and marker (``figure_style.series_style``); the
    y axis names the metric, its unit and direction, the x axis is ticked at the profiled radii; the
    legend sits below the panel and the title says what line and band are.

    Returns the ``Figure`` (saved to ``path`` when given)."""
    _check_figure(profile, path, "plot_profile")
    task = get_task(profile.task)
    epsilons = sorted(profile.epsilons)
    xs = np.array([0.0, *epsilons])
    fig = new_figure(6.4, 5.0)
    ax = fig.add_subplot(1, 1, 1)
    for index, h in enumerate(profile.heuristics()):
        style = series_style(index)
        mean = np.array([profile.nominal_worst.get(h, profile.nominal[h])]
                        + [profile.summary(h, e)[0] for e in epsilons])
        low, high = (np.array([mean[0]] + [_over_seeds(profile.worst(h, e), edge) for e in epsilons])
                     for edge in (np.min, np.max))
        drawn = np.isfinite(mean).any()  # a heuristic invalid everywhere has no point: its legend says so
        ax.plot(xs, mean, label=h if drawn else f"{h} (invalid everywhere: no point)", **style)
        if np.isfinite(low[1:]).any():
            ax.fill_between(xs, low, high, where=np.isfinite(low), **band_style(style))
    ax.set_xticks(xs, [f"{e:g}" for e in xs])
    ax.set_xlim(-0.05 * xs[-1], 1.05 * xs[-1])  # the radii's range even where no point is drawn
    if not any(np.isfinite(line.get_ydata()).any() for line in ax.lines):
        ax.text(0.5, 0.5, "no point: every heuristic is invalid everywhere\n(profile.md says why)", ha="center",
                va="center", transform=ax.transAxes, fontsize=9)
    ax.set_xlabel("eps, radius of the ball around the nominal histograms (0: the nominal set)")
    metric, comma, direction = metric_axis_label(task).rpartition(", ")
    ax.set_ylabel(wrap_words(f"worst instance's {metric}{comma}", 40) + "\n" + direction, fontsize=9)
    ax.grid(alpha=0.3)
    fig.suptitle(f"Worst {task.metric_name} the adversary finds within eps on {task.name}\n"
                 + wrap_words(_profile_caption(profile), 90, keep=r"[^;\s][^;]*"), fontsize=10)
    legend_below(fig, [ax])
    return finish_figure(fig, path)


def _check_figure(profile, path, function: str) -> None:
    if not isinstance(profile, Profile):
        raise BadArgumentType(f"{function}: profile: give a Profile (rp.profile(...)), got {type(profile).__name__}")
    check_figure_path(function, path)


def _over_seeds(worst: np.ndarray, edge) -> float:
    """``edge`` (``np.min``, ``np.max``) of the seeds' worst metrics at one radius; NaN where fewer than
    two seeds found one (a band needs two)."""
    found = worst[np.isfinite(worst)]
    return float(edge(found)) if found.size > 1 else math.nan


def _profile_caption(profile: Profile) -> str:
    """What a line and its band are, in the words of the table's caption."""
    at_zero = (f"at eps 0: the worst of the {profile.nominal_count} nominal instances" if profile.nominal_count
               else "at eps 0: the nominal set's worst instance")
    if len(profile.seeds) == 1:
        return f"line: adversary seed {profile.seeds[0]} (one seed, so no band); {at_zero}"
    return (f"line: mean over {len(profile.seeds)} adversary seeds; band: from the lowest to the highest seed "
            f"(the table's ± is the {LEVEL * 100:g} % t interval of the mean); {at_zero}")


def plot_worst_distributions(profile: Profile, heuristic: str, path: str | Path | None = None):
    """Per eps one panel: the distribution of the worst instance found within eps (of the seed that
    found the worst) against its nearest nominal histogram, the centre of the eps-ball it was
    projected onto (the mean of the nominal histograms for a profile that kept only that), over the
    task's shift dimension in its own units (item sizes, durations, ...; ``figures.shift_axis``),
    ticked at whole values. The panels share both axes, the smallest eps on top; each names the
    metric found and the distance d to that histogram; the legend sits below them.

    Returns the ``Figure`` (saved to ``path`` when given)."""
    _check_figure(profile, path, "plot_worst_distributions")
    epsilons = sorted(profile.epsilons)
    profile.worst(heuristic, epsilons[0])  # a heuristic the profile does not hold: refused as worst_distribution does
    task = get_task(profile.task)
    edges, axis = _shift_edges(task, profile)
    fig = new_figure(7.2, 1.5 * len(epsilons) + 1.8)
    axes = fig.subplots(len(epsilons), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    metric = task.metric_name + (f" ({task.metric_unit})" if task.metric_unit else "")
    colour = series_style(0)["color"]
    centres = np.array(profile.nominal_histograms, dtype=float)
    centre_label = ("nearest nominal histogram, the centre of its eps-ball" if len(centres)
                    else "nominal histograms, mean")
    for ax, e in zip(axes, epsilons):
        worst = _worst_point(profile, heuristic, e)
        index, _ = nearest(worst.distribution, centres) if worst is not None and len(centres) else (None, None)
        centre = profile.nominal_histogram if index is None else centres[index]
        ax.stairs(centre, edges, fill=True, color="lightgray", label=centre_label)
        if worst is None:  # and why, as the first of its searches that failed says
            why = next((p.reason for p in profile.points if p.heuristic == heuristic and p.epsilon == e), "")
            ax.set_title(f"eps = {e:g}: no search found an instance" + (f" ({_short(why)})" if why else ""),
                         fontsize=9, loc="left")
        else:
            ax.stairs(worst.distribution, edges, color=colour, lw=1.3,
                      label="distribution of the worst instance found within eps")
            to = "" if index is None else f" to nominal no. {index + 1} of {len(centres)}"
            found = (f"{metric} = {worst.metric:.3g}" if math.isfinite(worst.metric) else
                     f"invalid ({_short(worst.reason.removeprefix(INVALID_THERE) or 'it fails there')})")
            ax.set_title(f"eps = {e:g}: {found} (seed {worst.seed}), d = {worst.distance:.3g}{to}", fontsize=9,
                         loc="left")
        ax.grid(alpha=0.3)
    fig.supylabel("probability", fontsize=9)
    label_shift_axis(axes[-1], edges, axis)
    seeds = (f"the worst of {len(profile.seeds)} adversary seeds" if len(profile.seeds) > 1
             else f"adversary seed {profile.seeds[0]}")
    against = ("against its nearest nominal histogram (the centre of its eps-ball)\nd: the distance to it"
               if len(centres) else "against the mean of the nominal histograms\nd: the distance to the nearest one")
    fig.suptitle(f"Distributions of {profile.shift or task.shift.name} under which {heuristic} did worst on "
                 f"{task.name}, per eps\n{seeds} {against}: mean absolute difference per cell, as eps", fontsize=10)
    legend_below(fig, axes)
    return finish_figure(fig, path)


def _short(reason: str) -> str:
    return textwrap.shorten(reason, 66, placeholder="...")


def _worst_point(profile: Profile, heuristic: str, epsilon: float) -> ProfilePoint | None:
    """The search at ``epsilon`` that found the worst instance, as ``Profile.worst_distribution`` picks it."""
    found = [p for p in profile.points if p.heuristic == heuristic and p.epsilon == epsilon and p.distribution]
    return max(found, key=lambda p: p.metric) if found else None


def _shift_edges(task, profile: Profile) -> tuple[np.ndarray, str]:
    """The cells' edges in the shift dimension's units and the axis label; cell indices when the
    profile's histogram does not have the task's cells (a profile of another version of the task)."""
    edges, axis = shift_axis(task)
    cells = len(profile.nominal_histogram)
    if len(edges) == cells + 1:
        return edges, axis
    return np.arange(cells + 1) - 0.5, f"{profile.shift or task.shift.name} (cell of {cells})"
