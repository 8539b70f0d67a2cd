"""Throughput by worker count, and one job's cost split into its parts.

1. The engine alone: ``--programs`` programs (the task's baselines and perturbed copies of them,
   so that no two are the same text) on the nominal set, every instance a job of its own, through
   a pool of 1, 2, ... ``--max-workers`` sandboxed workers (default: this machine's cores), and on
   ``dask://local:N`` with ``--dask``: instance evaluations per second, and the speed-up over one
   worker measured in the same run.
2. The validation suite (the task's first two baselines) at 1 and 2 workers: the ratio.
3. One job (the first baseline on one nominal instance, on a warm worker) in parts, each the
   difference of two measurements made here: the program's own decisions (in-process evaluation
   minus the replay of its decisions), the simulation (the replay), the process's start (a job on a
   one-decision instance), of which confinement (the same with ``confine=False, audit=False``), the
   look-ahead check (``foresight=1`` minus ``0``), and the rest (transfers, the worker's replay,
   the pipe's round trips).
4. Whole runs (plain, offline sampler, the task's public nominal set) with one program in flight
   and with ``--in-flight`` k, each at 1, 2, ... ``--max-workers`` workers: instance evaluations
   per second over the run's wall time, the speed-up over one worker with the same k, and whether
   the run recorded the same samples and scores as at one worker (it must: workers change only
   the speed).

    python benchmarks/engine_throughput.py [--task obp] [--programs 12] [--max-workers N] [--dask]
    python benchmarks/engine_throughput.py --runs-only [--in-flight 4] [--run-budget 24]

The figures depend on the machine and on what else runs on it: quote the medians on an idle one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code, not an installed one's

from judge_cost import median_seconds  # this folder is on the path of a script run from it

from raise_plugin.config import RunConfig
from raise_plugin.engine import Engine, ProgramSpec, SandboxLimits
from raise_plugin.runner import start_run
from tasks import get_task
from tasks.common.decision import Recorder, Replay
from bench_args import at_least, task_name


def _programs(task, count: int) -> list:
    """Baselines as named specs, then program texts: a baseline's scores plus a tiny, distinct tilt."""
    names = list(task.baselines)
    out = [ProgramSpec(baseline=n) for n in names]
    template = task.template_program
    k = 0
    while len(out) < count:
        k += 1
        out.append(template.replace("return ", f"return {1e-9 * k!r} + ", 1) if "return " in template else template)
    return out[:count]


def throughput(task_name: str, programs, instances, executor) -> float:
    """Instance evaluations per second of ``programs`` on ``instances`` through ``executor``."""
    limits = SandboxLimits(foresight=0.25)
    with Engine(task_name, executor, limits=limits) as engine:
        engine.map(programs[:1], instances[:1], split="instance")  # workers started, instance set sent
        start = time.perf_counter()
        results = engine.map(programs, instances, split="instance")
        seconds = time.perf_counter() - start
    assert all(r.valid for r in results), [r.reason for r in results if not r.valid][:3]
    return len(programs) * len(instances) / seconds


def validation_ratio(task_name: str, repeats: int) -> tuple[float, float]:
    task = get_task(task_name)
    instances = [i for d in task.validation_suite() for i in d.instances]
    specs = [ProgramSpec(baseline=n) for n in list(task.baselines)[:2]]
    seconds = []
    for workers in (1, 2):
        with Engine(task_name, f"process:{workers}", limits=SandboxLimits(foresight=0.25)) as engine:
            seconds.append(median_seconds(lambda: engine.map(specs, instances, split="instance"), repeats))
    return seconds[0], seconds[1]


def job_parts(task_name: str, repeats: int) -> dict:
    task = get_task(task_name)
    instance = task.nominal_instances()[0]
    baseline = next(iter(task.baselines))
    function = task.baselines[baseline]
    recorder = Recorder(function)
    task.evaluate(recorder, instance)
    decisions = np.asarray(recorder.decisions, dtype=np.int64)
    in_process = median_seconds(lambda: task.evaluate(function, instance), repeats)
    replay = median_seconds(lambda: task.evaluate(Replay(decisions), instance), repeats)
    tiny = task.sample_instance(np.eye(task.shift.cells)[0], np.random.default_rng(0), length=1) \
        if hasattr(task, "sample_instance") else instance
    spec = ProgramSpec(baseline=baseline)
    parts = {}
    for name, limits in (("job", SandboxLimits(foresight=0.0)), ("checked", SandboxLimits(foresight=1.0)),
                         ("start", SandboxLimits(foresight=0.0)),
                         ("start_unconfined", SandboxLimits(foresight=0.0, confine=False, audit=False))):
        target = instance if name in ("job", "checked") else tiny
        with Engine(task_name, "process:1", limits=limits) as engine:
            parts[name] = median_seconds(lambda: engine.evaluate(spec, [target], split=1), repeats)
    return {"decisions": int(decisions.size), "in_process": in_process, "simulation": replay,
            "program_decisions": max(0.0, in_process - replay), "process_start": parts["start"],
            "confinement": max(0.0, parts["start"] - parts["start_unconfined"]),
            "lookahead_check": max(0.0, parts["checked"] - parts["job"]), "job": parts["job"],
            "rest": max(0.0, parts["job"] - parts["start"] - in_process - replay)}


def run_throughput(task_name: str, in_flight: int, workers: int, budget: int, pop_size: int, nominal: int | None,
                   out: Path) -> tuple[float, list]:
    """Instance evaluations per second of one plain run, and its samples (program, score)."""
    config = RunConfig(task=task_name, robust=False, budget=budget, pop_size=pop_size, seed=0, out=str(out),
                       instance_seed="public", nominal=nominal, programs_in_flight=in_flight, workers=workers,
                       validation_trace=False, host_profiler=False)
    method = start_run(config)
    start = time.perf_counter()
    summary = method.run()
    seconds = time.perf_counter() - start
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    return summary["compute"]["total_evaluations"] / seconds, [(s["program_id"], s["score"]) for s in samples]


def runs(task_name: str, in_flight: int, max_workers: int, budget: int, pop_size: int, nominal: int | None) -> None:
    print(f"{task_name}: plain runs of {budget} samples (pop {pop_size}, offline sampler, "
          f"{nominal or 'all'} nominal instances), instance evaluations/s over the run's wall time; "
          f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        for k in sorted({1, in_flight}):
            base = first = None
            for workers in range(1, max_workers + 1):
                rate, samples = run_throughput(task_name, k, workers, budget, pop_size, nominal,
                                               Path(tmp) / f"k{k}-w{workers}")
                base, first = base or rate, first or samples
                print(f"  {k} in flight, {workers} worker{'s' if workers > 1 else ' '} {rate:8.1f} evaluations/s   "
                      f"{rate / base:5.2f}x one worker   same samples: {samples == first}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=task_name, default="obp")
    parser.add_argument("--programs", type=at_least(1), default=12)
    parser.add_argument("--max-workers", type=at_least(1), default=max(2, os.cpu_count() or 1))
    parser.add_argument("--repeats", type=at_least(1), default=7)
    parser.add_argument("--dask", action="store_true", help="also on dask://local:N")
    parser.add_argument("--in-flight", type=at_least(1), default=4,
                        help="programs in flight of the second run (part 4)")
    parser.add_argument("--run-budget", type=at_least(1), default=24, help="samples of each run (part 4)")
    parser.add_argument("--run-pop-size", type=at_least(2), default=4)
    parser.add_argument("--run-nominal", type=at_least(1), default=None,
                        help="the first N nominal instances (part 4; fewer than the workers shows what k adds)")
    parser.add_argument("--runs-only", action="store_true", help="only part 4: whole runs")
    args = parser.parse_args()
    if args.runs_only:
        runs(args.task, args.in_flight, args.max_workers, args.run_budget, args.run_pop_size, args.run_nominal)
        return
    task = get_task(args.task)
    instances = task.nominal_instances()
    programs = _programs(task, args.programs)
    print(f"{args.task}: {len(programs)} programs x {len(instances)} nominal instances, each a job; "
          f"{os.cpu_count()} cores")
    base = None
    for workers in range(1, args.max_workers + 1):
        rate = throughput(args.task, programs, instances, f"process:{workers}")
        base = base or rate
        print(f"  process:{workers:<3} {rate:8.1f} instance evaluations/s   {rate / base:5.2f}x one worker")
        if args.dask:
            try:
                rate = throughput(args.task, programs, instances, f"dask://local:{workers}")
                print(f"  dask://local:{workers:<3} {rate:5.1f} instance evaluations/s   {rate / base:5.2f}x")
            except ImportError as exc:
                print(f"  dask: {exc}")
    one, two = validation_ratio(args.task, max(1, args.repeats // 3))
    print(f"validation suite, first two baselines: 1 worker {one:.2f} s, 2 workers {two:.2f} s: {one / two:.2f}x")
    parts = job_parts(args.task, args.repeats)
    print(f"one job, {parts.pop('decisions')} decisions on one nominal instance (medians, ms):")
    for name, seconds in parts.items():
        print(f"  {name.replace('_', ' '):<18} {1000 * seconds:8.2f}")
    runs(args.task, args.in_flight, args.max_workers, args.run_budget, args.run_pop_size, args.run_nominal)


if __name__ == "__main__":
    main()
