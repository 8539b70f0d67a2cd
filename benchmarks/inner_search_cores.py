"""Wall time of one refresh's inner search on one sandboxed worker and on two.

The search a robust run makes at each refresh (the task's robust defaults: eps, projection,
objective and its references; R = ``default_draws``; P_in = 8, G_in = 4; the task's nominal
set), on one heuristic, three ways:

- ``whole search in 1 worker``: the whole search sent to one sandboxed worker, evaluating
  serially there (``inner_parallel=False``, and what a refresh did before);
- ``1 worker`` / ``2 workers``: the search in this process, its evaluations (candidates, draws,
  references) sent to a pool of sandboxed workers, as a robust run does with its own pool.

Each repeat runs the three on the same seed, in turn, on warm pools; the medians, the ratio
``1 worker / 2 workers`` and whether every way found the same result are printed.

    python benchmarks/inner_search_cores.py [--task obp] [--repeats 3] [--program FILE]

The figures depend on the machine and on what else runs on it (the load average is printed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from raise_plugin.adversary import default_draws, search  # noqa: E402
from raise_plugin.adversary.objective import parse_objective  # noqa: E402
from raise_plugin.resolve import robust_defaults  # noqa: E402
from raise_plugin.engine import ProcessExecutor, SourcePriority  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.common.evaluation import named_baseline  # noqa: E402
from bench_args import at_least, task_name  # noqa: E402

PROGRAMS = {"obp": ROOT / "examples" / "heuristics" / "obp_weibull_specialised.py"}


def settings(task) -> dict:
    """The inner search of a refresh with the task's robust defaults."""
    defaults = robust_defaults(task.name)
    objective = parse_objective(defaults["adversary_objective"])
    if objective.reference == "baseline":
        references = [named_baseline(task, objective.name)]
    else:  # the callback's references under metric and regret:baselines: every classical baseline
        references = list((getattr(task, "baselines", None) or {}).items())
    return dict(epsilon=defaults["epsilon"], projection=defaults["projection"], objective=objective.kind,
                references=references, inner_draws=default_draws(task), inner_population=8, inner_generations=4)


def heuristic(task, path: str | None):
    path = path or PROGRAMS.get(task.name)
    if path is None:  # a classical baseline, shipped by reference
        return next(iter(task.baselines.values()))
    return SourcePriority(Path(path).read_text())


def fingerprint(result) -> tuple:
    return (result.metric, result.fitness, result.seed, result.draw, tuple(result.genes),
            tuple(c.fitness for c in result.candidates))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=task_name, default="obp")
    parser.add_argument("--repeats", type=at_least(1), default=3)
    parser.add_argument("--program", help="the attacked heuristic's file (default: the Weibull-specialised one on obp)")
    args = parser.parse_args(argv)

    task = get_task(args.task)
    kwargs = settings(task)
    priority = heuristic(task, args.program)
    nominal = task.nominal_instances()
    shown = {k: (v if k != "references" else [n for n, _ in v]) for k, v in kwargs.items()}
    print(f"{task.name}: {len(nominal)} nominal instances, inner search {shown}")
    print(f"load average before: {os.getloadavg()}")

    times: dict[str, list[float]] = {"whole search in 1 worker": [], "1 worker": [], "2 workers": []}
    found: dict[str, list[tuple]] = {k: [] for k in times}
    with ProcessExecutor(1) as whole, ProcessExecutor(1) as one, ProcessExecutor(2) as two:
        for pool in (whole, one, two):  # start the workers before the clock does
            pool.map(abs, range(2 * pool.workers))
        for seed in range(args.repeats):
            for name, pool in (("whole search in 1 worker", whole), ("1 worker", one), ("2 workers", two)):
                start = time.perf_counter()
                if name.startswith("whole"):
                    result = whole.submit(search, task, priority, nominal=nominal, seed=seed, **kwargs).result()
                else:
                    result = search(task, priority, nominal=nominal, seed=seed, executor=pool, **kwargs)
                times[name].append(time.perf_counter() - start)
                found[name].append(fingerprint(result))
            print(f"  seed {seed}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    print(f"load average after: {os.getloadavg()}")

    medians = {k: statistics.median(v) for k, v in times.items()}
    evaluations = result.evaluations + result.reference_evaluations
    for name, seconds in medians.items():
        print(f"{name:>26}: median {seconds:.2f} s ({1000 * seconds / evaluations:.0f} ms per evaluation, "
              f"{evaluations} evaluations)")
    print(f"ratio 1 worker / 2 workers: {medians['1 worker'] / medians['2 workers']:.2f}")
    print(f"ratio whole search in 1 worker / 2 workers: {medians['whole search in 1 worker'] / medians['2 workers']:.2f}")
    same = all(found[k] == found["1 worker"] for k in found)
    print(f"same result every way: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
