"""Wall time of one small ``compare`` run three ways: one job at a time in this process, in local
job processes, and on a Dask LocalCluster of one-thread worker processes; and whether their
tables are byte-for-byte the same.

    python benchmarks/compare_jobs.py --task ovrp --budget 40 --seeds 2 --jobs 2 --out bench-compare-jobs
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from raise_plugin.engine.executors import default_workers
from raise_plugin.harness.compare import run_compare
from raise_plugin.errors import UserError
from raise_plugin.harness.compare_config import CompareConfig
from bench_args import at_least, task_name

COMPARED = ("results.csv", "table_all_distributions.md", "table_significance.md", "report.md")


def one(args, out: Path, **where) -> float:
    shutil.rmtree(out, ignore_errors=True)
    config = CompareConfig(task=args.task, methods=("eoh",), epsilons=(0.002,), budget=args.budget,
                           pop_size=args.pop_size, seeds=tuple(range(args.seeds)), out=str(out),
                           suite_instances=args.suite_instances, **where)
    started = time.time()
    run_compare(config, quiet=True)
    return time.time() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", type=task_name, default="ovrp")
    p.add_argument("--budget", type=at_least(1), default=40)
    p.add_argument("--pop-size", type=at_least(2), default=10)
    p.add_argument("--seeds", type=at_least(1), default=2)
    p.add_argument("--suite-instances", type=at_least(1), default=1)
    p.add_argument("--jobs", type=at_least(1), default=max(2, default_workers()))
    p.add_argument("--out", default="bench-compare-jobs")
    args = p.parse_args()
    root = Path(args.out)
    from distributed import LocalCluster
    with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        address = cluster.scheduler_address.replace("tcp://", "")
        ways = {"this process, one job at a time": {"jobs": 1},
                f"{args.jobs} local job processes": {"jobs": args.jobs},
                f"Dask LocalCluster, {args.jobs} workers x 1 thread": {"executor": f"dask://{address}"},
                f"Dask LocalCluster, run directories shipped back": {"executor": f"dask://{address}",
                                                                    "ship_runs": True}}
        print(f"{args.task}, EoH plain and RAISE, budget {args.budget}, population {args.pop_size}, "
              f"{args.seeds} seeds, {args.suite_instances} instance(s) per test dataset; {default_workers()} cores")
        walls = {}
        for k, (name, where) in enumerate(ways.items()):
            try:
                walls[name] = one(args, root / f"way{k}", **where)
            except UserError as exc:  # settings the compare refuses (a budget too small for a refresh, ...)
                p.error(str(exc))
        first = root / "way0"
        for k, (name, wall) in enumerate(walls.items()):
            same = all((first / f).read_bytes() == (root / f"way{k}" / f).read_bytes() for f in COMPARED)
            print(f"{name:<52} {wall:7.1f} s  {walls[next(iter(walls))] / wall:5.2f}x  "
                  f"tables {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
