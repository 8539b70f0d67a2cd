"""The offline (LLM-free) program sampler: parseable, valid, diverse, seeded, and a real search."""
import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest
from llm4ad.base import TextFunctionProgramConverter
from llm4ad.method.eoh.prompt import EoHPrompt
from llm4ad.method.eoh.sampler import EoHSampler

from raise_plugin.llm import NO_LLM_NOTICE, OfflineSampler
from raise_plugin.llm import offline as offline_module
from raise_plugin.llm.offline_library import library_for_task
from raise_plugin.programs import compile_priority
from tasks import get_task

_bench_path = Path(__file__).resolve().parents[2] / "benchmarks" / "offline_sampler_quality.py"
_spec = importlib.util.spec_from_file_location("offline_sampler_quality", _bench_path)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

# the paper's tasks; the libraries knapsack and cvrp declare: test_offline_declared_libraries.py
TASKS = ["obp", "ojsp", "ovrp"]


def small_evaluation(name, count=2, length=600):
    """The task's evaluation on a few short instances drawn from its nominal distribution."""
    task = get_task(name)
    rng = np.random.default_rng(0)
    p = np.mean([task.histogram(i) for i in task.nominal_instances()], axis=0)
    n = min(length, task.nominal_length) if task.length_can_change else None
    instances = [task.sample_instance(p, rng, length=n) for _ in range(count)]
    return task, task.evaluation(instances=instances, safe_evaluate=False)


def eoh_prompts(evaluation, sampler):
    """One prompt of each EoH operator, parents taken from the sampler's own creations."""
    target = TextFunctionProgramConverter.text_to_function(evaluation.template_program)
    eoh = EoHSampler(sampler, evaluation.template_program)
    desc = evaluation.task_description
    i1 = EoHPrompt.get_prompt_i1(desc, target)
    parents = []
    for _ in range(3):
        thought, func = eoh.get_thought_and_function(i1)
        func.algorithm = thought
        parents.append(func)
    return {"i1": i1, "e1": EoHPrompt.get_prompt_e1(desc, parents[:2], target),
            "e2": EoHPrompt.get_prompt_e2(desc, parents[1:], target),
            "m1": EoHPrompt.get_prompt_m1(desc, parents[0], target),
            "m2": EoHPrompt.get_prompt_m2(desc, parents[2], target)}


@pytest.mark.parametrize("name", TASKS)
def test_every_eoh_operator_prompt_gets_a_parseable_valid_program(name):
    task, evaluation = small_evaluation(name)
    sampler = OfflineSampler(seed=1)
    eoh = EoHSampler(sampler, evaluation.template_program)
    for op, prompt in eoh_prompts(evaluation, sampler).items():
        thought, func = eoh.get_thought_and_function(prompt)
        assert thought is not None and "no LLM" in thought, op
        assert func is not None, op
        program = TextFunctionProgramConverter.function_to_program(func, evaluation.template_program)
        assert bench.score_program(evaluation, str(program)) is not None, op
    assert set(sampler.usage.per_operator()) == {"i1", "e1", "e2", "m1", "m2"}


@pytest.mark.parametrize("name", TASKS)
def test_a_200_sample_stream_is_valid_and_diverse(name):
    _, evaluation = small_evaluation(name)
    stream = bench.operator_stream(evaluation, OfflineSampler(seed=0), 200, seed=0)
    valid = sum(s["score"] is not None for s in stream) / len(stream)
    distinct = len({s["program"] for s in stream if s["program"]}) / len(stream)
    assert valid >= 0.95 and distinct >= 0.9, (valid, distinct)


@pytest.mark.parametrize("name", TASKS)
def test_programs_for_each_signature_return_one_finite_score_per_candidate(name):
    lib = library_for_task(name)
    header = f"def priority({', '.join(lib.params)}):"
    sampler = OfflineSampler(seed=3)
    rng = np.random.default_rng(0)
    parents = []
    for _ in range(4):
        answer = sampler.draw_sample(f"Implement the following Python function:\n{header}\n")
        parents.append(answer.split("```python\n")[1].split("```")[0].split("import numpy as np\n\n")[1])
    prompts = [f"Create a new heuristic.\n{header}\n"]
    prompts += [f"I have one algorithm:\n{parents[k]}\n\nPlease give a {phrase}.\n"
                f"Implement the following Python function:\n{header}\n"
                for k, phrase in enumerate(["modified version", "different parameter settings"])]
    prompts.append(f"No. 1\n{parents[2]}\nNo. 2\n{parents[3]}\nA totally different form.\n"
                   f"Implement the following Python function:\n{header}\n")
    for prompt in prompts:
        code = sampler.draw_sample(prompt).split("```python\n")[1].split("```")[0]
        priority = compile_priority(code, "priority")
        for n in (1, 7):
            if name == "obp":
                out = priority(30.0, rng.integers(30, 201, size=n).astype(float))
            elif name == "ojsp":
                ops = np.column_stack([rng.integers(0, 10, n), rng.integers(1, 100, n), rng.integers(0, 50, n),
                                       rng.integers(100, 900, n), rng.integers(100, 600, n), rng.integers(1, 10, n)])
                out = priority(60, ops)
            else:
                cust = np.array([0.3, 0.7, 0.15, 0.4, 0.5, 0.8])
                cand = rng.random((n, 8))
                out = priority(cust, cand)
            out = np.asarray(out)
            assert out.shape == (n,) and np.all(np.isfinite(out)), (name, code)


def test_answers_are_deterministic_under_a_seed():
    _, evaluation = small_evaluation("obp")
    a = [OfflineSampler(seed=5).draw_sample(p) for p in eoh_prompts(evaluation, OfflineSampler(seed=5)).values()]
    b = [OfflineSampler(seed=5).draw_sample(p) for p in eoh_prompts(evaluation, OfflineSampler(seed=5)).values()]
    c = [OfflineSampler(seed=6).draw_sample(p) for p in eoh_prompts(evaluation, OfflineSampler(seed=5)).values()]
    assert a == b and a != c


def test_reflection_prompts_get_a_short_hint_not_code():
    prompt = ("[Worse code]\ndef priority(item, bins):\n    return -bins\n\n[Better code]\n"
              "def priority(item, bins):\n    return bins - item\n\n"
              "You respond with some hints for designing better heuristics, using less than 20 words.")
    answer = OfflineSampler(seed=0).draw_sample(prompt)
    assert "def " not in answer and "```" not in answer and len(answer.split()) < 30


def test_parents_in_another_form_are_still_transformed_into_valid_code():
    parent = ("def priority(item, bins):\n    scores = []\n    for b in bins:\n"
              "        scores.append(-(b - item) * 1.5 + 2.0)\n    return np.array(scores)\n")
    prompt = (f"Code:\n{parent}\nPlease create a new algorithm that has a different parameter settings.\n"
              "Implement the following Python function:\ndef priority(item, bins):\n")
    code = OfflineSampler(seed=0).draw_sample(prompt).split("```python\n")[1].split("```")[0]
    out = compile_priority(code, "priority")(10.0, np.array([20.0, 50.0, 11.0]))
    assert out.shape == (3,) and "for b in bins" in code


def test_the_sampler_says_plainly_that_no_llm_is_used(caplog, monkeypatch):
    monkeypatch.setattr(offline_module, "_warned", offline_module.threading.Event())
    with caplog.at_level(logging.WARNING, logger="raise_plugin.llm"):
        sampler = OfflineSampler(seed=0)
        assert not caplog.records  # made, asked nothing (GP keeps a back-end it never asks): nothing to say
        prompt = "Implement the following Python function:\ndef priority(item, bins):\n"
        sampler.draw_sample(prompt)
        OfflineSampler(seed=1).draw_sample(prompt)
    assert [r.getMessage() for r in caplog.records].count(NO_LLM_NOTICE) == 1
    assert "NO LLM IS USED" in sampler.describe()


@pytest.mark.parametrize("name", TASKS)
def test_a_short_host_eoh_run_improves_on_the_seeds(name):
    from llm4ad.method.eoh import EoH
    task, evaluation = small_evaluation(name, count=2, length=500)
    seeds = bench.seed_scores(evaluation, library_for_task(name))
    best_seed = max(s for s in seeds.values() if s is not None)
    np.random.seed(0)  # the host's parent selection uses numpy's global state
    import tempfile
    with tempfile.TemporaryDirectory() as log_dir:
        profiler = bench._ScoreLog(log_dir)
        method = EoH(llm=OfflineSampler(seed=0), evaluation=evaluation, profiler=profiler, max_generations=None,
                     max_sample_nums=80, pop_size=8)
        method.run()
    best = max(s for s in profiler.scores if s is not None and np.isfinite(s))
    assert best > best_seed
