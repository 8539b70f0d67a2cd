"""The compiled evaluation path (``--jit``), per task: how many programs compile and how much
faster an evaluation is, compiled against Python, measured in the same run.

Programs: the offline sampler's answers to the task's first prompt (its description and
template; ``--programs`` distinct ones) and the task's classical baselines. Each is evaluated
on the task's nominal instances in one sandboxed worker on the Python path, then in one worker
on the compiled path twice, compiled at its first evaluation (``jit_after=0``): "cold" (compile
and probe included, as a program's first evaluation in a worker) and "warm" (the verdict kept,
as every later evaluation of it). The metrics must be the same on both paths. Runs one worker at a time, so the two cores' load is
the same for all three.

    python benchmarks/jit_speed.py [--tasks obp,ojsp,ovrp] [--programs 50] [--instances K] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from raise_plugin.engine import Engine, ProgramSpec, SandboxLimits  # noqa: E402
from tasks import get_task  # noqa: E402
from bench_args import at_least, opened, output_file, task_names  # noqa: E402

_CODE = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def sampler_programs(task, count: int, seed: int = 0) -> list[str]:
    from raise_plugin.llm import OfflineSampler

    sampler = OfflineSampler(seed, task=task.name)
    prompt = task.task_description + "\n" + task.template_program
    found: dict[str, None] = {}
    for _ in range(count * 4):
        match = _CODE.search(sampler.draw_sample(prompt))
        if match:
            found.setdefault(match.group(1), None)
        if len(found) >= count:
            break
    return list(found)


def timed(engine: Engine, spec: ProgramSpec, instances) -> tuple[float, object]:
    start = time.perf_counter()
    result = engine.evaluate(spec, instances, split=1)
    return time.perf_counter() - start, result


def measure(task_name: str, programs: int, instances: int | None) -> dict:
    task = get_task(task_name)
    nominal = task.nominal_instances()[:instances] if instances else task.nominal_instances()
    groups = {"sampler": [ProgramSpec(code=c, label=f"sample {i}") for i, c in
                          enumerate(sampler_programs(task, programs))],
              "baselines": [ProgramSpec(baseline=name) for name in task.baselines]}
    out: dict = {"task": task_name, "instances": len(nominal)}
    limits = SandboxLimits(timeout=600)
    at_once = SandboxLimits(timeout=600, jit=True, jit_after=0)  # cold: the compile and probes, measured
    with Engine(task_name, "process:1", limits=limits) as python, \
            Engine(task_name, "process:1", limits=at_once) as jit:
        python.evaluate(ProgramSpec(baseline=next(iter(task.baselines))), nominal)  # workers up, sets sent
        jit.evaluate(ProgramSpec(baseline=next(iter(task.baselines))), nominal)
        for group, specs in groups.items():
            rows = []
            for spec in specs:
                t_py, r_py = timed(python, spec, nominal)
                t_cold, r_cold = timed(jit, spec, nominal)
                t_warm, r_warm = timed(jit, spec, nominal)
                same = r_py.metrics == r_warm.metrics and r_py.kind == r_warm.kind
                rows.append({"program": spec.name, "valid": r_py.valid, "compiled": bool(r_warm.compiled),
                             "fallback": r_warm.fallback, "python_s": t_py, "cold_s": t_cold, "warm_s": t_warm,
                             "same_metrics": same})
            out[group] = summarise(rows)
            out[group]["rows"] = rows
    return out


def summarise(rows: list[dict]) -> dict:
    valid = [r for r in rows if r["valid"]]
    compiled = [r for r in valid if r["compiled"]]
    reasons: dict[str, int] = {}
    for r in valid:
        if not r["compiled"]:
            key = r["fallback"].split(":", 1)[0]
            reasons[key] = reasons.get(key, 0) + 1
    ratio = lambda a, b: (sum(r[a] for r in compiled) / sum(r[b] for r in compiled)) if compiled else None  # noqa: E731
    return {
        "programs": len(rows), "valid": len(valid), "compiled": len(compiled),
        "compile_rate": len(compiled) / len(valid) if valid else None,
        "python_reasons": reasons,
        "all_same_metrics": all(r["same_metrics"] for r in rows),
        # over the compiled programs: Python time / compiled time (> 1: compiled is faster)
        "speedup_warm": ratio("python_s", "warm_s"),
        "speedup_cold": ratio("python_s", "cold_s"),
        "median_speedup_warm": statistics.median(r["python_s"] / r["warm_s"] for r in compiled) if compiled else None,
        # over every valid program, as a run would see it (fallbacks included, first evaluation cold)
        "run_speedup_cold": (sum(r["python_s"] for r in valid) / sum(r["cold_s"] for r in valid)) if valid else None,
        "run_speedup_warm": (sum(r["python_s"] for r in valid) / sum(r["warm_s"] for r in valid)) if valid else None,
        "python_s_per_program": statistics.mean(r["python_s"] for r in valid) if valid else None,
        # what a compile and its probes cost (cold - warm): the price --jit-after weighs
        "median_compile_s": statistics.median(r["cold_s"] - r["warm_s"] for r in compiled) if compiled else None,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=task_names, default="obp,ojsp,ovrp")
    parser.add_argument("--programs", type=at_least(0), default=50)
    parser.add_argument("--instances", type=at_least(1), help="the first K nominal instances (default all)")
    parser.add_argument("--json", type=output_file, metavar="FILE")
    args = parser.parse_args(argv)
    results = []
    for name in args.tasks.split(","):
        result = measure(name, args.programs, args.instances)
        results.append(result)
        for group in ("sampler", "baselines"):
            g = result[group]
            fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
            print(f"{name:5s} {group:9s} compiled {g['compiled']}/{g['valid']} valid "
                  f"(rate {fmt(g['compile_rate'])}), speed-up warm {fmt(g['speedup_warm'])} "
                  f"(median {fmt(g['median_speedup_warm'])}), cold {fmt(g['speedup_cold'])}; "
                  f"whole group warm {fmt(g['run_speedup_warm'])} cold {fmt(g['run_speedup_cold'])}; "
                  f"Python {fmt(g['python_s_per_program'])} s/program; compile and probes "
                  f"{fmt(g['median_compile_s'])} s (median); same metrics {g['all_same_metrics']}; "
                  f"on Python: {g['python_reasons']}", flush=True)
    if args.json:
        with opened(args.json) as fh:
            fh.write(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
