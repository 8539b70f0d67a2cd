"""Quality of the offline (LLM-free) program sampler on every available task.

For each task: (1) a 200-sample stream of EoH operator prompts (i1 for the first 20,
then e1/e2/m1/m2 on rank-selected parents, as EoH does), each answer parsed by the
host's EoH sampler and evaluated: the share that evaluate to a valid score and the
share of distinct programs; (2) a short host EoH run driven by the sampler: its best
score against the best of the sampler's classical seeds (host score = -metric).
Usage: python benchmarks/offline_sampler_quality.py [--samples 200] [--eoh-samples 200] [--seed 0] [--tasks obp ...]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from llm4ad.base import TextFunctionProgramConverter
from llm4ad.method.eoh import EoH, EoHProfiler
from llm4ad.method.eoh.prompt import EoHPrompt
from llm4ad.method.eoh.sampler import EoHSampler

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parent))  # bench_args, when the tests load this file as a module
from raise_plugin.llm.offline import OfflineSampler  # noqa: E402
from raise_plugin.llm.offline_library import library_for_task  # noqa: E402
from raise_plugin.programs import ProgramError, compile_priority  # noqa: E402
from tasks import get_task, list_tasks  # noqa: E402
from bench_args import at_least, task_name  # noqa: E402


def score_program(evaluation, program_text: str) -> float | None:
    try:
        func = compile_priority(program_text, None)
    except ProgramError:
        return None
    return evaluation.evaluate_program(program_text, func)


def operator_stream(evaluation, sampler, n: int, seed: int, n_create: int = 20) -> list[dict]:
    """Answers to ``n`` EoH prompts, parents chosen from the valid programs so far."""
    rng = np.random.default_rng(seed)
    template = evaluation.template_program
    target = TextFunctionProgramConverter.text_to_function(template)
    eoh_sampler = EoHSampler(sampler, template)
    done: list[dict] = []
    population: list = []
    ops = ("e1", "e2", "m1", "m2")
    for i in range(n):
        op = "i1" if i < n_create or len(population) < 2 else ops[(i - n_create) % 4]
        ranked = sorted(population, key=lambda f: f.score, reverse=True)[:10]
        weights = np.array([1.0 / (r + len(ranked)) for r in range(len(ranked))])

        def pick(k):
            return [ranked[j] for j in rng.choice(len(ranked), size=k, replace=False, p=weights / weights.sum())]

        desc = evaluation.task_description
        if op == "i1":
            prompt = EoHPrompt.get_prompt_i1(desc, target)
        elif op in ("e1", "e2"):
            prompt = getattr(EoHPrompt, f"get_prompt_{op}")(desc, pick(2), target)
        else:
            prompt = getattr(EoHPrompt, f"get_prompt_{op}")(desc, pick(1)[0], target)
        thought, func = eoh_sampler.get_thought_and_function(prompt)
        program = None
        if func is not None and thought is not None:
            program = TextFunctionProgramConverter.function_to_program(func, template)
        score = score_program(evaluation, str(program)) if program is not None else None
        done.append({"op": op, "program": str(program) if program is not None else None, "score": score})
        if score is not None:
            func.score, func.algorithm = score, thought
            population.append(func)
    return done


def seed_scores(evaluation, lib) -> dict[str, float | None]:
    """Host scores of the sampler's classical seeds (its creation answers, in order)."""
    sampler = OfflineSampler(0)
    target = TextFunctionProgramConverter.text_to_function(evaluation.template_program)
    prompt = EoHPrompt.get_prompt_i1(evaluation.task_description, target)
    eoh_sampler = EoHSampler(sampler, evaluation.template_program)
    scores = {}
    for name, _ in lib.seeds:
        thought, func = eoh_sampler.get_thought_and_function(prompt)
        program = TextFunctionProgramConverter.function_to_program(func, evaluation.template_program)
        scores[name] = score_program(evaluation, str(program))
    return scores


class _ScoreLog(EoHProfiler):
    """The host's EoH profiler (it moves the sample counter) that also keeps every score."""

    def __init__(self, log_dir: str):
        super().__init__(log_dir=log_dir, create_random_path=False)
        self.scores: list[float | None] = []

    def register_function(self, function, **kwargs):
        self.scores.append(function.score)
        super().register_function(function, **kwargs)


def eoh_run(task, samples: int, seed: int) -> list[float | None]:
    np.random.seed(seed)  # the host's Population.selection draws from numpy's global state
    with tempfile.TemporaryDirectory() as log_dir:
        with contextlib.redirect_stdout(io.StringIO()):  # the host prints every sample
            profiler = _ScoreLog(log_dir)
            method = EoH(llm=OfflineSampler(seed), evaluation=task.evaluation(safe_evaluate=False),
                         profiler=profiler, max_generations=None, max_sample_nums=samples, pop_size=10,
                         num_samplers=1, num_evaluators=1)
            method.run()
    return profiler.scores


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=at_least(1), default=200)
    parser.add_argument("--eoh-samples", type=at_least(1), default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", nargs="*", type=task_name, default=None)
    args = parser.parse_args(argv)
    names = args.tasks or [t for t in list_tasks() if library_for_task(t)]
    print(OfflineSampler(args.seed).describe())
    for name in names:
        task = get_task(name)
        evaluation = task.evaluation(safe_evaluate=False)
        t0 = time.time()
        stream = operator_stream(evaluation, OfflineSampler(args.seed), args.samples, args.seed)
        valid = [s for s in stream if s["score"] is not None]
        programs = [s["program"] for s in stream if s["program"] is not None]
        print(f"[{name}] {len(stream)} samples: valid {len(valid) / len(stream):.1%}, "
              f"distinct {len(set(programs)) / len(stream):.1%} ({time.time() - t0:.0f} s)")
        per_op = {}
        for s in stream:
            ok, total = per_op.get(s["op"], (0, 0))
            per_op[s["op"]] = (ok + (s["score"] is not None), total + 1)
        print(f"[{name}]   valid per operator: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in per_op.items()))
        seeds = seed_scores(evaluation, library_for_task(name))
        best_seed_name, best_seed = max(((k, v) for k, v in seeds.items() if v is not None), key=lambda kv: kv[1])
        t0 = time.time()
        scores = [s for s in eoh_run(task, args.eoh_samples, args.seed) if s is not None and np.isfinite(s)]
        best = max(scores) if scores else float("nan")
        print(f"[{name}] host EoH, {args.eoh_samples} samples ({time.time() - t0:.0f} s): best score {best:.4f} "
              f"vs best seed {best_seed_name} {best_seed:.4f} (metric {-best:.4f} vs {-best_seed:.4f}; "
              f"improvement {best - best_seed:+.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
