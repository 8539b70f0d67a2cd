"""Strength of the inner GA against random search in the eps-ball, on OBP, at an equal evaluation budget.

For a heuristic specialised to the nominal Weibull sizes and for BestFit, at each eps
the GA (``projection="paper"`` and ``"sphere"``) and random search each get the same
number of evaluations. Random search draws points uniformly from the simplex
(Dirichlet(1, ..., 1)) and moves each radially onto the eps-sphere of its nearest
nominal histogram (the random points lie far outside the ball, so both projections
put them on the sphere). Both sample their instances the same way (``--noise``).

Reported per method: ``found``, the metric of the worst instance found minus the
heuristic's mean nominal metric (what the outer loop receives), and with
``--holdout N`` ``held-out``, the same for the mean over N fresh instances drawn
from the worst distribution (whether the distribution, not one lucky sample, is bad).
Means over ``--seeds`` seeds; ``ratio`` = GA / random.

``--resample``: the re-sampling check instead (does the search find distributions
that hurt, or draws that happen to?). On OBP, OJSP and OVRP, with every baseline of
the task as the attacked heuristic, at each eps and for ``draws`` R in 1, 2, 4, the
search (P_in = 8, G_in = 4) reports a degradation over the heuristic's nominal mean;
M = 5 fresh instances from the returned distribution (seeds disjoint from the
search's) give the degradation the distribution really has. ``share`` = fresh /
reported per cell (cells with a reported degradation <= 0 are left out), median over
the cells (baselines x eps x seeds) of a task; ``pooled`` = mean fresh / mean reported.

Usage: python benchmarks/adversary_strength.py [--seeds 3] [--quick] [--noise common] [--holdout 3] [--eps ...]
       python benchmarks/adversary_strength.py --resample [--seeds 8] [--eps 0.002 0.005] [--draws 1 2 4]
                                               [--tasks obp ojsp ovrp]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "heuristics"))

from obp_weibull_specialised import priority as weibull_specialised  # noqa: E402

from raise_plugin.adversary import default_draws, instance_seed, project, sample_and_evaluate, search  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.obp.baselines import best_fit  # noqa: E402
from bench_args import at_least  # noqa: E402

EPSILONS = (0.001, 0.002, 0.005, 0.010)
HEURISTICS = {"Weibull-specialised": weibull_specialised, "BestFit": best_fit}
PROJECTIONS = ("paper", "sphere")


def random_search(task, priority, epsilon, histograms, nominal_length, budget, seed, noise):
    """The worst of ``budget`` random eps-sphere points (Dirichlet directions), sampled like the GA."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xD1]))
    worst = None
    for k in range(budget):
        point = rng.dirichlet(np.ones(task.shift.cells))
        p = project(point, histograms, epsilon, "sphere").distribution
        s = instance_seed(seed, 0 if noise == "common" else k + 1)
        _, metric, _ = sample_and_evaluate(task, priority, p, nominal_length, s)
        if worst is None or metric > worst[0]:
            worst = (metric, p)
    return worst


def held_out(task, priority, p, length, seed, count):
    """Mean metric over ``count`` fresh instances from ``p`` (seeds disjoint from the search's)."""
    if count == 0:
        return float("nan")
    rng_seeds = np.random.SeedSequence([seed, 0x40]).generate_state(count, np.uint64)
    return float(np.mean([sample_and_evaluate(task, priority, p, length, int(s))[1] for s in rng_seeds]))


def fresh_mean(task, priority, p, length, seed, count):
    """Mean metric over ``count`` fresh instances from ``p``, seeded apart from any search seed."""
    seeds = np.random.SeedSequence([seed, 0xF4E5]).generate_state(count, np.uint64)
    return float(np.mean([sample_and_evaluate(task, priority, p, length, int(s))[1] for s in seeds]))


def resample_check(seeds, epsilons, draws, fresh, noise, tasks=("obp", "ojsp", "ovrp")) -> None:
    """The re-sampling check of every task's baselines: reported vs fresh degradation per R."""
    started = time.time()
    print(f"re-sampling check: P_in = 8, G_in = 4, noise = {noise}, {seeds} seed(s), eps {list(epsilons)}, "
          f"M = {fresh} fresh instances; share = fresh degradation / reported degradation")
    summary = {}
    for task_name in tasks:
        task = get_task(task_name)
        nominal = task.nominal_instances()
        print(f"\n{task_name.upper()} (K = {task.shift.cells}, n = {task.nominal_length}, "
              f"{len(nominal)} nominal instances)")
        header = (f"{'heuristic':<10} {'eps':>6} {'R':>2}  {'reported':>9} {'fitness':>9} {'fresh':>9} "
                  f"{'share':>6} {'share fit':>9}")
        print(header)
        print("-" * len(header))
        for name, priority in task.baselines.items():
            base = float(np.mean([task.evaluate(priority, s) for s in nominal]))
            for eps in epsilons:
                for R in draws:
                    rep, fit, frs, shares, shares_fit = [], [], [], [], []
                    for seed in range(seeds):
                        r = search(task, priority, eps, nominal=nominal, seed=seed, inner_draws=R, noise=noise)
                        reported, fitness = r.metric - base, r.fitness - base
                        kept = fresh_mean(task, priority, r.distribution, r.length, seed, fresh) - base
                        rep.append(reported)
                        fit.append(fitness)
                        frs.append(kept)
                        if reported > 0:
                            shares.append(kept / reported)
                        if fitness > 0:
                            shares_fit.append(kept / fitness)
                        cell = summary.setdefault((task_name, R), ([], [], [], []))
                        if reported > 0:
                            cell[0].append(kept / reported)
                        if fitness > 0:
                            cell[1].append(kept / fitness)
                        cell[2].append(kept)
                        cell[3].append(reported)
                    print(f"{name:<10} {eps:6.3f} {R:2d}  {np.mean(rep):+9.4f} {np.mean(fit):+9.4f} "
                          f"{np.mean(frs):+9.4f} {np.median(shares) if shares else float('nan'):6.2f} "
                          f"{np.median(shares_fit) if shares_fit else float('nan'):9.2f}")
    print("\nshare kept, per task: median over the cells (baselines x eps x seeds) of fresh / reported, "
          "of the candidate's mean fitness in brackets; pooled = mean fresh / mean reported")
    print(f"{'task':<6} " + " ".join(f"{'R = ' + str(R):>24}" for R in draws) + "   default_draws")
    for task_name in tasks:
        cells = [summary[(task_name, R)] for R in draws]
        print(f"{task_name:<6} " + " ".join(f"{np.median(a):6.2f} ({np.median(b):5.2f}) {np.mean(k) / np.mean(r):6.2f}p"
                                            for a, b, k, r in cells)
              + f"   {default_draws(task_name)}")
    print(f"\n{time.time() - started:.0f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=at_least(1), default=3, help="seeds per setting (default 3)")
    parser.add_argument("--quick", action="store_true", help="one seed, eps 0.002 and 0.010, no held-out check")
    parser.add_argument("--noise", choices=("common", "independent"), default="common")
    parser.add_argument("--holdout", type=at_least(0), default=3, help="fresh instances per worst distribution")
    parser.add_argument("--eps", type=float, nargs="+", default=None, help=f"radii (default {EPSILONS})")
    parser.add_argument("--resample", action="store_true",
                        help="the re-sampling check on OBP, OJSP and OVRP instead (see the module docstring)")
    parser.add_argument("--draws", type=at_least(1), nargs="+", default=[1, 2, 4], help="R values of --resample")
    parser.add_argument("--fresh", type=at_least(1), default=5, help="fresh instances per distribution in --resample")
    parser.add_argument("--tasks", nargs="+", choices=("obp", "ojsp", "ovrp"), default=["obp", "ojsp", "ovrp"],
                        help="tasks of --resample")
    args = parser.parse_args(argv)
    if args.resample:
        resample_check(args.seeds, args.eps or (0.002, 0.005), args.draws, args.fresh, args.noise, args.tasks)
        return 0
    seeds = 1 if args.quick else args.seeds
    epsilons = args.eps or ((0.002, 0.010) if args.quick else EPSILONS)
    holdout = 0 if args.quick else args.holdout

    task = get_task("obp")
    nominal = task.nominal_instances()
    histograms = np.stack([task.histogram(s) for s in nominal])
    n = task.nominal_length
    print(f"OBP, K = {task.shift.cells}, n = {n}, C = {nominal[0]['capacity']}; noise = {args.noise}; "
          f"{seeds} seed(s); degradation = metric - nominal mean, in waste-ratio points")
    started = time.time()
    for name, priority in HEURISTICS.items():
        base = float(np.mean([task.evaluate(priority, s) for s in nominal]))
        print(f"\n{name}: nominal mean {base:.3f} %")
        header = f"{'eps':>6}  {'method':<12} {'evals':>5}  {'found':>8}  {'held-out':>8}  {'ratio':>6}  {'ratio h-o':>9}"
        print(header)
        print("-" * len(header))
        for eps in epsilons:
            rows = {}
            for projection in PROJECTIONS:
                found, heldout, evals = [], [], []
                for seed in range(seeds):
                    r = search(task, priority, eps, seed=seed, projection=projection, noise=args.noise)
                    found.append(r.metric - base)
                    heldout.append(held_out(task, priority, r.distribution, r.length, seed, holdout) - base)
                    evals.append(r.evaluations)
                rows[f"GA {projection}"] = (found, heldout, evals)
            budget = max(max(v[2]) for v in rows.values())
            found, heldout = [], []
            for seed in range(seeds):
                metric, p = random_search(task, priority, eps, histograms, n, budget, seed, args.noise)
                found.append(metric - base)
                heldout.append(held_out(task, priority, p, n, seed, holdout) - base)
            random_found, random_heldout = np.mean(found), np.mean(heldout)
            rows["random"] = (found, heldout, [budget])
            for method, (f, h, e) in rows.items():
                f_mean, h_mean = float(np.mean(f)), float(np.mean(h))
                ratio = f_mean / random_found if random_found > 0 else float("inf")
                ratio_h = h_mean / random_heldout if random_heldout > 0 else float("nan")
                r_txt = "" if method == "random" else f"{ratio:6.2f}"
                h_txt = "" if method == "random" or holdout == 0 else f"{ratio_h:9.2f}"
                h_val = "" if holdout == 0 else f"{h_mean:+8.3f}"
                print(f"{eps:6.3f}  {method:<12} {max(e):5d}  {f_mean:+8.3f}  {h_val:>8}  {r_txt:>6}  {h_txt:>9}")
    print(f"\n{time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
