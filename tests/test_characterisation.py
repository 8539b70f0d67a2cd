"""Characterisation: a short offline robust run per task records exactly what it recorded before,
on the Python path and on the compiled one (``--jit``).

An offline run (seed 0, one sampler, budget 60, tau 2) on each task; its samples, their
per-instance metrics, the re-scores, the populations, the instance set (digests and
provenance) and the checkpoint, with every timing field removed, are hashed and compared
with ``golden/characterisation.json``. A change to the robust core that is meant to keep
behaviour (a refactor) must keep these hashes; a change that is meant to alter behaviour
rewrites them, on purpose, with

    .venv/bin/python tests/test_characterisation.py --write

With ``jit``, every program is compiled at its first evaluation (``jit_after`` 0), and the offline
sampler's programs compile, so the run evaluates almost every sample compiled; it must record
what the Python path records. A compile and its probes cost about 0.9 s a program, so the
compiled path runs a shorter run (12 samples in generations of 4, a refresh after each: three
refreshes, re-scoring and the adversary's inner search included) and is held against the
Python path's same run, made beside it; the Python path's 60 samples are held against the
goldens. The compiled run has one
evaluation worker, so each program is compiled once rather than in every worker; what a run
records does not depend on its number of workers (tests/test_robust.py).

In a small size (``make test``, CI) the Python path runs the first 24 samples (two refreshes, each
re-scoring the population and running the inner search) and is held against the goldens' ``first``
entry: the same run's records up to its 24th sample. ``--write`` checks that the short run's
records are the long run's first lines before it writes them. With ``--full-size`` (``make
test-full``) the whole 60 samples run; the compiled path runs 4 samples in the small size (one
generation and its refresh, which re-scores the population compiled).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden" / "characterisation.json"
TASKS = ("obp", "ojsp", "ovrp")
TIMING = {"sample_time", "evaluate_time", "search_seconds", "seconds", "rescore_seconds", "outer_seconds",
          "inner_seconds", "total_seconds", "inner_loop_share_seconds", "sampler_seconds", "wall_seconds"}


def _strip(value):
    """``value`` without its timing fields, its floats to 10 significant digits: numpy picks its
    SIMD kernels by CPU (AVX2, AVX-512), and they round the last bits of a sum differently, so
    the projected distributions differ by an ulp from one machine to the next; a change of
    behaviour moves far more than the tenth digit."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.10g}")
    return value


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(_strip(value), sort_keys=True).encode()).hexdigest()[:16]


def characterise(task: str, out: Path, jit: bool = False, budget: int = 60, pop_size: int = 6, tau: int = 2) -> dict:
    """Run the characterisation run of ``task`` (``budget`` samples, generations of ``pop_size``, a
    refresh every ``tau``-th) into ``out``; the hashes of what it recorded."""
    from raise_plugin.config import RunConfig
    from raise_plugin.rundir.files import read_jsonl
    from raise_plugin.runner import start_run

    # the paper's robust settings and the task's public nominal set, pinned: the task's own defaults
    # may change on purpose, and a run's instances are otherwise drawn afresh (``instance_seed``)
    config = RunConfig(task=task, robust=True, budget=budget, pop_size=pop_size, tau=tau, seed=0, num_samplers=1,
                       instance_seed="public",
                       epsilon=0.002, aggregation="mean", adversary_objective="metric", projection="paper",
                       nominal=2 if task == "obp" else None, out=str(out), validation_trace=False,
                       host_profiler=False,
                       **({"jit": True, "jit_after": 0.0, "executor": "process:1"} if jit else {}))
    start_run(config).run()
    index = read_jsonl(out / "instances" / "index.jsonl")
    samples = read_jsonl(out / "samples.jsonl")
    checkpoint = json.loads((out / "checkpoint.json").read_text())
    return {
        "samples": _digest([{k: s[k] for k in ("sample", "program_id", "score", "joined", "duplicate", "error",
                                               "metrics", "failed_on")} for s in samples]),
        "scores": _digest(read_jsonl(out / "scores.jsonl")),
        "populations": _digest(read_jsonl(out / "population.jsonl")),
        "instances": _digest(index),
        "checkpoint": _digest(checkpoint),
        "count": {"samples": len(samples), "refreshes": checkpoint["refreshes"],
                  "instances": sum(r.get("kind") == "instance" for r in index)},
    }


_NO_NUMBA = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                               reason="the compiled path needs numba (the jit extra)")
# OBP's run on the compiled path compiles each of its programs in each worker (two minutes on two
# cores); its compiled decisions are held against Python's per program in tests/engine/compiled/test_compiled.py
CASES = [(task, "python") for task in TASKS] + [pytest.param(task, "jit", marks=_NO_NUMBA) for task in ("ojsp", "ovrp")]


JIT_RUN = dict(budget=12, pop_size=4, tau=1)
FIRST = 24  # the small size's samples: two refreshes of the 60-sample run (generations of 6, tau 2)
RECORDS = ("samples.jsonl", "scores.jsonl", "population.jsonl", "instances/index.jsonl")


def _first_lines_of(short: Path, long: Path) -> bool:
    """Whether every record of the short run is the long run's line at its place (timings aside)."""
    def lines(run, name):
        return [_strip(json.loads(line)) for line in (run / name).read_text().splitlines()]
    for name in RECORDS:
        first = lines(short, name)
        if first != lines(long, name)[:len(first)]:
            return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("task, path", CASES)
def test_a_short_robust_run_records_what_it_recorded_before(task, path, tmp_path, full_size):
    if path == "jit":
        run = JIT_RUN if full_size else {**JIT_RUN, "budget": 4}
        golden = characterise(task, tmp_path / "python", **run)
        now = characterise(task, tmp_path / task, jit=True, **run)
        tally = json.loads((tmp_path / task / "compiled.json").read_text())
        assert tally["programs_compiled"] >= now["count"]["samples"] // 2 and tally["programs_waiting"] == 0, tally
        assert now["count"]["refreshes"] == run["budget"] // run["pop_size"], now["count"]  # one after each generation
    else:
        golden = json.loads(GOLDEN.read_text())[task]
        golden = golden if full_size else golden["first"]
        now = characterise(task, tmp_path / task, **({} if full_size else {"budget": FIRST}))
    assert now["count"] == golden["count"]
    changed = [k for k in ("samples", "scores", "populations", "instances", "checkpoint") if now[k] != golden[k]]
    assert not changed, f"{task} ({path}): the run recorded other {', '.join(changed)} than before"


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for task in TASKS:
            result[task] = characterise(task, Path(tmp) / task)
            result[task]["first"] = characterise(task, Path(tmp) / f"{task}-first", budget=FIRST)
            if not _first_lines_of(Path(tmp) / f"{task}-first", Path(tmp) / task):
                sys.exit(f"{task}: the {FIRST}-sample run is not the first {FIRST} samples of the whole run")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(json.dumps(result, indent=1))
