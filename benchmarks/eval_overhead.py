"""Evaluation overhead and throughput: the engine against the host's ``SecureEvaluator``.

1. Per-evaluation overhead on a tiny instance (10 OBP items): the host's SecureEvaluator
   with spawn and with fork (a fresh process per evaluation) against the engine's
   ``EngineEvaluator`` (reused sandboxed workers); overhead = wall time per evaluation
   minus the time of the same evaluation run directly in this process.
2. Throughput of the full OBP test suite (300 instances, BestFit) with 1 and 2 workers;
   parallel efficiency = t1 / (2 t2).

    python benchmarks/eval_overhead.py [--quick] [--json out.json]

The figures depend on the machine and on what else runs on it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from llm4ad.base import SecureEvaluator  # noqa: E402

from raise_plugin.engine import Engine, EngineEvaluator, ProcessExecutor, ProgramSpec  # noqa: E402
from raise_plugin.programs import compile_priority  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.common.evaluation import TaskEvaluation  # noqa: E402
from bench_args import opened, output_file  # noqa: E402

BEST_FIT = "import numpy as np\n\ndef priority(item: float, bins: np.ndarray) -> np.ndarray:\n    return -bins\n"


def variants():
    """BestFit with a different constant each time: every evaluation gets a new program text,
    as in a search, so no cache can help either side."""
    k = 0
    while True:
        k += 1
        yield BEST_FIT.replace("return -bins", f"return -bins + {k}")


def tiny_evaluation(task) -> TaskEvaluation:
    items = np.round(np.clip(np.random.default_rng(0).weibull(3, 10) * 45, 1, 100)).astype(np.int64)
    instance = task.make_instance(items, None, capacity=100)
    return TaskEvaluation(task, [instance], timeout_seconds=30)


def per_call(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def overhead(task, repeats: int) -> dict:
    evaluation = tiny_evaluation(task)
    programs = variants()

    def direct_once():
        code = next(programs)
        evaluation.evaluate_program(code, compile_priority(code, None))

    direct = per_call(direct_once, repeats * 4)
    base = statistics.median(direct)
    rows = {"direct_ms": base * 1e3}
    for label, fork, n in (("host_spawn", False, max(5, repeats // 10)), ("host_fork", True, repeats)):
        host = SecureEvaluator(evaluation, fork_proc=fork)
        scores = set()
        t = per_call(lambda: scores.add(host.evaluate_program(next(programs))), n)
        assert len(scores) == 1 and None not in scores, scores
        rows[f"{label}_ms"] = (statistics.median(t) - base) * 1e3
    with ProcessExecutor(1) as pool:
        ours = EngineEvaluator(evaluation, pool)
        ours.evaluate_program(BEST_FIT)  # start the worker and send the instance once
        t = per_call(lambda: ours.evaluate_program(next(programs)), repeats * 4)
        assert ours.failures == {}, ours.failures
    rows["engine_ms"] = (statistics.median(t) - base) * 1e3
    rows["ratio_engine_to_host_fork"] = rows["engine_ms"] / rows["host_fork_ms"]
    return rows


def suite_time(task, instances, workers: int) -> float:
    with Engine(task, f"process:{workers}", timeout=300) as engine:
        engine.evaluate(BEST_FIT, instances[:workers], split=workers)  # workers up, set sent
        start = time.perf_counter()
        futures = engine.submit_each(ProgramSpec(code=BEST_FIT), instances)
        results = [f.result() for f in futures]
        elapsed = time.perf_counter() - start
    assert all(r.valid for r in results)
    return elapsed


def throughput(task, rounds: int) -> dict:
    instances = [inst for d in task.test_suite() for inst in d.instances]
    start = time.perf_counter()
    priority = compile_priority(BEST_FIT, None)
    for inst in instances:
        task.evaluate(priority, inst)
    in_process = time.perf_counter() - start
    t1 = min(suite_time(task, instances, 1) for _ in range(rounds))
    t2 = min(suite_time(task, instances, 2) for _ in range(rounds))
    return {"instances": len(instances), "in_process_s": in_process, "t1_s": t1, "t2_s": t2,
            "efficiency": t1 / (2 * t2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--json", type=output_file, help="also write the figures to this file")
    parser.add_argument("--skip-suite", action="store_true", help="only the overhead part")
    args = parser.parse_args(argv)
    task = get_task("obp")
    repeats = 20 if args.quick else 100
    figures = {"cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
               "load_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
               "overhead": overhead(task, repeats)}
    o = figures["overhead"]
    print("per-evaluation overhead on a 10-item OBP instance (median, minus the direct evaluation time "
          f"of {o['direct_ms']:.3f} ms):")
    print(f"  host SecureEvaluator, spawn : {o['host_spawn_ms']:9.3f} ms")
    print(f"  host SecureEvaluator, fork  : {o['host_fork_ms']:9.3f} ms")
    print(f"  engine (reused worker)      : {o['engine_ms']:9.3f} ms   "
          f"({o['ratio_engine_to_host_fork']:.3f} of the host's fork figure; goal <= 0.1)")
    if not args.skip_suite:
        figures["suite"] = s = throughput(task, 1 if args.quick else 2)
        print(f"OBP test suite, BestFit, {s['instances']} instances (best of rounds):")
        print(f"  in this process, no sandbox : {s['in_process_s']:7.2f} s")
        print(f"  engine, 1 worker            : {s['t1_s']:7.2f} s")
        print(f"  engine, 2 workers           : {s['t2_s']:7.2f} s")
        print(f"  parallel efficiency t1/(2 t2): {100 * s['efficiency']:.0f} %   (goal >= 80 %)")
    figures["load_after"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print(f"load average before/after: {figures['load_before']:.2f} / {figures['load_after']:.2f} "
          f"on {figures['cores']} cores")
    if args.json:
        with opened(args.json) as fh:
            fh.write(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
