"""Reading a model's answer to a code prompt (``raise_plugin.llm.answers``): the shapes real models
answer in become the program they mean, or an unusable answer, and the offline sampler's answers
read exactly as the host reads them."""
from __future__ import annotations

import itertools
import json
import threading

import pytest
from llm4ad.base import LLM, SampleTrimmer, TextFunctionProgramConverter
from llm4ad.method.eoh.prompt import EoHPrompt
from llm4ad.method.eoh.sampler import EoHSampler

from raise_plugin.llm import OfflineSampler
from raise_plugin.llm.answers import MAX_THOUGHT_CHARS, NO_DESCRIPTION, ReadingSampler, ReadingTrimmer
from tasks import get_task

SIG = "def priority(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:"
CHEAPEST = "    return -candidate_insertions[:, 2]"

# answer -> (the thought read, the body the sample gets); ``None``: no sample (unusable)
SHAPES = {
    "the host's shape": ("{Cheapest.}\n" + SIG + "\n" + CHEAPEST + "\n", "{Cheapest.}", CHEAPEST),
    "no braces, prose and a fence": ("Here is the function:\n```python\nimport numpy as np\n\n" + SIG + "\n"
                                     + CHEAPEST + "\n```\n", "{Here is the function:}", CHEAPEST),
    "only code": (SIG + "\n    w = {'a': 1}\n" + CHEAPEST + "\n", "{" + NO_DESCRIPTION + "}",
                  "    w = {'a': 1}\n" + CHEAPEST),
    "a thought over two lines": ("{Cheapest\n insertion.}\n```python\n" + SIG + "\n" + CHEAPEST + "\n```",
                                 "{Cheapest insertion.}", CHEAPEST),
    "tabs": ("{t}\n```python\n" + SIG + "\n\td = candidate_insertions[:, 2]\n\tif d.size:\n\t\td = d + 1\n"
             "\treturn -d\n```", "{t}", "    d = candidate_insertions[:, 2]\n    if d.size:\n        d = d + 1\n"
                                         "    return -d"),
    "two spaces": ("{t}\n" + SIG + "\n  d = candidate_insertions[:, 2]\n  return -d\n", "{t}",
                   "    d = candidate_insertions[:, 2]\n    return -d"),
    "a helper first": ("{h}\n```python\ndef cost(c):\n    return c[:, 2]\n\n" + SIG
                       + "\n    return -cost(candidate_insertions)\n```", "{h}",
                       "    def cost(c):\n        return c[:, 2]\n    return -cost(candidate_insertions)"),
    "helpers calling helpers, one unused": (
        "{h}\n```python\ndef unused():\n    return 0\n\ndef base(c):\n    return c[:, 2]\n\ndef cost(c):\n"
        "    return base(c)\n\n" + SIG + "\n    return -cost(candidate_insertions)\n```", "{h}",
        "    def base(c):\n        return c[:, 2]\n    def cost(c):\n        return base(c)\n"
        "    return -cost(candidate_insertions)"),
    "a helper after": ("{h}\n```python\n" + SIG + "\n    return -cost(candidate_insertions)\n\ndef cost(c):\n"
                       "    return c[:, 2]\n```", "{h}",
                       "    def cost(c):\n        return c[:, 2]\n    return -cost(candidate_insertions)"),
    "imports and a constant the function uses, a call after it": (
        "{m}\n```python\nfrom __future__ import annotations\nimport math\nimport numpy as np\nEPS = 1e-9\n\n" + SIG
        + "\n    '''doc'''\n    return -candidate_insertions[:, 2] * math.pi + EPS\n\nprint(priority(1, 2))\n"
          "best = priority(3, 4)\n```", "{m}",
        "    import math\n    EPS = 1e-9\n    return -candidate_insertions[:, 2] * math.pi + EPS"),
    "prose around the fence": ("{x}\nSure! Here it is:\n\n```python\n" + SIG + "\n" + CHEAPEST
                               + "\n```\n\nIt picks the cheapest {insertion}.", "{x}", CHEAPEST),
    "two fences: the last that writes it": ("{x}\n```python\n" + SIG + "\n    return -candidate_insertions[:, 6]\n```\n"
                                            "Wait, that is wrong. Corrected:\n```python\n" + SIG + "\n" + CHEAPEST
                                            + "\n```", "{x}", CHEAPEST),
    "a usage example after it": ("{x}\n```python\n" + SIG + "\n" + CHEAPEST + "\n```\nUsage:\n```python\n"
                                 "print(priority(np.zeros(6), np.zeros((3, 8))))\n```", "{x}", CHEAPEST),
    "an earlier version echoed, then the new one, unfenced": (
        "{x}\n" + SIG + "\n    return candidate_insertions[:, 0]\n\nImproved:\n" + SIG + "\n" + CHEAPEST + "\n", "{x}",
        CHEAPEST),
    "a usage example before it": ("{x}\n```python\nx = priority(a, b)\n```\n```python\n" + SIG + "\n" + CHEAPEST
                                  + "\n```", "{x}", CHEAPEST),
    "Windows line ends": (("{w}\n```python\n" + SIG + "\n" + CHEAPEST + "\n```\n").replace("\n", "\r\n"), "{w}",
                          CHEAPEST),
    "a fence with no language": ("{x}\n```\n" + SIG + "\n" + CHEAPEST + "\n```", "{x}", CHEAPEST),
    "an indented fence": ("{x}\n1. The code:\n   ```python\n   " + SIG + "\n   " + CHEAPEST + "\n   ```", "{x}",
                          CHEAPEST),
    "another name, the template's parameters": ("{x}\ndef priority_v2(customer_features, candidate_insertions):\n"
                                                + CHEAPEST + "\n", "{x}", CHEAPEST),
    "FunSearch's previous version repeated, then the new one": (
        "```python\ndef priority_v1(customer_features, candidate_insertions):\n    return candidate_insertions[:, 0]\n"
        "\n\ndef priority_v2(customer_features, candidate_insertions):\n" + CHEAPEST + "\n```",
        "{" + NO_DESCRIPTION + "}", CHEAPEST),
    "a multi-line signature": ("{x}\n```python\ndef priority(\n    customer_features: np.ndarray,\n"
                               "    candidate_insertions: np.ndarray,\n) -> np.ndarray:\n" + CHEAPEST + "\n```", "{x}",
                               CHEAPEST),
    "one line": ("{x}\ndef priority(customer_features, candidate_insertions): return -candidate_insertions[:, 2]\n",
                 "{x}", CHEAPEST),
    "a body on the signature's last line": ("{x}\ndef priority(customer_features,\n             candidate_insertions):"
                                            " return -candidate_insertions[:, 2]\n", "{x}", CHEAPEST),
    "parameters named otherwise, an extra one with a default": (
        "{x}\ndef priority(features, insertions, weight: float = 2.0, *, shift=0.5):\n"
        "    return -insertions[:, 2] * weight + shift\n", "{x}",
        "    features, insertions = customer_features, candidate_insertions\n    weight = 2.0\n    shift = 0.5\n"
        "    return -insertions[:, 2] * weight + shift"),
    "the template's parameters in another order": ("{x}\ndef priority(candidate_insertions, customer_features):\n"
                                                   + CHEAPEST + "\n", "{x}", CHEAPEST),
    "one parameter renamed, in another order": ("{x}\ndef priority(candidate_insertions, features):\n" + CHEAPEST
                                                + "\n", "{x}", "    features = customer_features\n" + CHEAPEST),
    "async def awaiting nothing": ("{x}\n```python\nasync " + SIG + "\n" + CHEAPEST + "\n```", "{x}", CHEAPEST),
    "a static method of a class": ("{x}\n```python\nclass Heuristic:\n    @staticmethod\n    " + SIG + "\n    "
                                   + CHEAPEST + "\n```", "{x}", CHEAPEST),
    "a method of a class": ("{x}\n```python\nclass Heuristic:\n    def priority(self, customer_features, "
                            "candidate_insertions):\n    " + CHEAPEST + "\n```", "{x}", CHEAPEST),
    "a line of prose starting with def": ("{x}\ndefine a score.\n" + SIG + "\n" + CHEAPEST + "\n", "{x}", CHEAPEST),
    "the thought inside the fence": ("```python\n{Cheapest insertion.}\n\n" + SIG + "\n" + CHEAPEST + "\n```",
                                     "{Cheapest insertion.}", CHEAPEST),
    "the thought in a comment": ("```python\n# {Cheapest insertion.}\n" + SIG + "\n" + CHEAPEST + "\n```",
                                 "{Cheapest insertion.}", CHEAPEST),
    "a reasoning model's thinking with a draft": (
        "<think>\nMaybe {a draft}:\n```python\n" + SIG + "\n    return candidate_insertions[:, 0]\n```\nNo.\n</think>\n"
        "{Cheapest.}\n```python\n" + SIG + "\n" + CHEAPEST + "\n```", "{Cheapest.}", CHEAPEST),
    "thinking opened by the chat template": ("So {a draft}:\n" + SIG + "\n    return 0\n</think>\n\n{Cheapest.}\n"
                                             + SIG + "\n" + CHEAPEST + "\n", "{Cheapest.}", CHEAPEST),
    "thinking never closed (cut at the token cap)": ("<think>\n" + SIG + "\n" + CHEAPEST + "\n", None, None),
    "prose only": ("I would prioritise the routes that fit best.", None, None),
    "another function": ("```python\nimport numpy as np\n\ndef helper(x: float) -> float:\n    return x * 2.0\n```",
                         None, None),
    "async def that awaits": ("{x}\n```python\nasync " + SIG + "\n    await wait()\n" + CHEAPEST + "\n```", None, None),
}


class Fixed(LLM):
    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def draw_sample(self, prompt, *args, **kwargs):
        return self.answer


def template():
    return get_task("ovrp").evaluation().template_program


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_answer_shape_becomes_the_function_it_means_or_no_sample(shape):
    answer, thought, body = SHAPES[shape]
    read_thought, func = ReadingSampler(Fixed(answer), template()).get_thought_and_function("prompt")
    if body is None:
        assert (read_thought, func) == (None, None)
        return
    assert read_thought == thought
    assert func.name == "priority" and func.body == body
    program = str(TextFunctionProgramConverter.function_to_program(func, template()))
    compile(program, "<program>", "exec")  # a program Python reads


def test_a_long_thought_is_cut_to_its_bound():
    answer = "{" + "a long thought " * 70_000 + "}\n" + SIG + "\n" + CHEAPEST + "\n"
    thought, func = ReadingSampler(Fixed(answer), template()).get_thought_and_function("prompt")
    assert func.body == CHEAPEST
    assert thought.startswith("{a long thought") and thought.endswith(" ...}")
    assert len(thought) <= MAX_THOUGHT_CHARS + len("{ ...}")


def _stream(task, sampler, rounds=12):
    """Offline answers to EoH's prompts, parents drawn from the answers before (the host's reading)."""
    evaluation = get_task(task).evaluation()
    target = TextFunctionProgramConverter.text_to_function(evaluation.template_program)
    desc, parents, answers = evaluation.task_description, [], []
    for i in range(rounds):
        prompts = [EoHPrompt.get_prompt_i1(desc, target)]
        if len(parents) >= 2:
            a, b = parents[-1], parents[-2]
            prompts += [EoHPrompt.get_prompt_e1(desc, [a, b], target), EoHPrompt.get_prompt_e2(desc, [b, a], target),
                        EoHPrompt.get_prompt_m1(desc, a, target), EoHPrompt.get_prompt_m2(desc, b, target)]
        for prompt in prompts:
            answer = sampler.draw_sample(prompt)
            answers.append(answer)
            thought, func = EoHSampler(Fixed(answer), evaluation.template_program).get_thought_and_function("")
            func.algorithm = thought
            parents.append(func)
    return evaluation.template_program, answers


@pytest.mark.parametrize("task", ["obp", "ojsp", "ovrp", "knapsack", "cvrp"])
def test_the_offline_samplers_answers_read_exactly_as_the_host_reads_them(task):
    template_program, answers = _stream(task, OfflineSampler(seed=3, task=task))
    assert len(answers) > 40
    for answer in answers:
        host_thought, host_func = EoHSampler(Fixed(answer), template_program).get_thought_and_function("")
        thought, func = ReadingSampler(Fixed(answer), template_program).get_thought_and_function("")
        assert host_func is not None and thought == host_thought and str(func) == str(host_func)


def test_the_offline_samplers_answers_for_a_task_without_a_library_read_as_the_host_reads_them():
    template_program = ('import numpy as np\n\ndef weigh(values: np.ndarray, limit: float) -> np.ndarray:\n'
                        '    """Weights of the values."""\n    scaled = values / (limit + 1.0)\n'
                        '    for _ in range(2):\n        scaled = scaled * 0.5 + 0.25\n    return scaled - 0.1\n')
    sampler = OfflineSampler(seed=5)
    target = TextFunctionProgramConverter.text_to_function(template_program)
    parents = []
    for i in range(20):
        prompt = EoHPrompt.get_prompt_m1("Weigh values.", parents[-1], target) if parents and i % 2 \
            else EoHPrompt.get_prompt_i1("Weigh values.", target)
        answer = sampler.draw_sample(prompt)
        host_thought, host_func = EoHSampler(Fixed(answer), template_program).get_thought_and_function("")
        thought, func = ReadingSampler(Fixed(answer), template_program).get_thought_and_function("")
        assert host_func is not None and thought == host_thought and str(func) == str(host_func)
        host_func.algorithm = host_thought
        parents.append(host_func)


def _run_answers(method: str):
    """Answers a real model gives, in turn: no braces, tabs, a helper and an import before the function,
    a class holding it, a megabyte of thought, its parameters renamed and one added; each with its own
    constant."""
    count = itertools.count(1)
    lock = threading.Lock()

    def answer(prompt):
        with lock:
            n = next(count)
        expr = f"-candidate_insertions[:, 2] * {1 + n / 100}"
        return [f"Here is the function:\n```python\nimport numpy as np\n\n{SIG}\n    return {expr}\n```\n",
                f"{{tabs}}\n```python\n{SIG}\n\td = {expr}\n\treturn d\n```",
                f"{{helper}}\n```python\nimport math\ndef cost(c):\n    return c * math.e\n\n{SIG}\n"
                f"    return cost({expr})\n```",
                f"{{a class}}\n```python\nclass H:\n    @staticmethod\n    {SIG}\n        return {expr}\n```",
                "{" + "a long thought " * 70_000 + f"}}\n{SIG}\n    return {expr}\n",
                f"{{renamed}}\ndef priority(features, candidates, w=1.0):\n"
                f"    return {expr.replace('candidate_insertions', 'candidates')} * w\n"][n % 6]
    return answer


@pytest.mark.parametrize("method", ["eoh", "reevo", "partevo", "moh"])
def test_a_run_makes_a_valid_sample_of_each_answer_shape_and_quotes_a_bounded_thought(method, tmp_path, monkeypatch):
    from llm_chat_server import ChatServer

    from raise_plugin.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    with ChatServer(answer=_run_answers(method)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["run", "--task", "ovrp", "--method", method, "--no-robust", "--budget", "6", "--pop-size", "2",
                     "--nominal", "1", "--llm", "openai:test-model", "--out", str(out), "--no-progress",
                     "--no-validation-trace", "--no-host-profiler"])
        prompts = [" ".join(str(m.get("content", "")) for m in r["messages"]) for r in server.requests]
    assert code == 0
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 6 and all(s["score"] is not None for s in samples)
    assert all(len(s["algorithm"]) <= MAX_THOUGHT_CHARS + len("{ ...}") for s in samples)
    assert json.loads((out / "llm_usage.json").read_text())["total"]["unusable"] == 0
    assert max(len(p) for p in prompts) < 20_000  # a quoted thought is cut, not a megabyte


@pytest.mark.parametrize("task", ["obp", "ovrp"])
def test_the_offline_samplers_answers_to_funsearch_make_the_programs_the_host_makes_of_them(task):
    template_program, answers = _stream(task, OfflineSampler(seed=4, task=task), rounds=6)
    name = TextFunctionProgramConverter.text_to_function(template_program).name
    llm = Fixed("")
    for answer in answers:
        llm.answer = answer.replace(f"def {name}(", f"def {name}_v2(")  # FunSearch asks for the next version
        host = SampleTrimmer.sample_to_program(SampleTrimmer(llm).draw_sample(""), template_program)
        ours = SampleTrimmer.sample_to_program(ReadingTrimmer(llm, template_program).draw_sample(""), template_program)
        assert host is not None and str(ours) == str(host)


def _chat_versions(prompt_count, lock):
    """A chat model's answers to FunSearch's prompt (write ``priority_v2``): a helper first, tabs, an import."""
    def answer(prompt):
        with lock:
            n = next(prompt_count)
        expr = f"-candidate_insertions[:, 2] * {1 + n / 100}"
        head = "def priority_v2(customer_features, candidate_insertions):"
        return [f"Sure:\n```python\ndef cost(c):\n    return c\n\n{head}\n    return cost({expr})\n```",
                f"```python\n{head}\n\treturn {expr}\n```",
                f"```python\nimport math\n{head}\n    return {expr} * math.e\n```"][n % 3]
    return answer


@pytest.mark.parametrize("method", ["funsearch", "hillclimb"])
def test_a_host_method_without_thoughts_makes_valid_samples_of_a_chat_models_answers(method, tmp_path, monkeypatch):
    from llm_chat_server import ChatServer

    from raise_plugin.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    with ChatServer(answer=_chat_versions(itertools.count(1), threading.Lock())) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["run", "--task", "ovrp", "--method", method, "--no-robust", "--budget", "6", "--pop-size", "2",
                     "--nominal", "1", "--llm", "openai:test-model", "--out", str(out), "--no-progress",
                     "--no-validation-trace", "--no-host-profiler"])
        answered = len(server.requests)
    assert code == 0
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) >= 6 and all(s["score"] is not None for s in samples)
    usage = json.loads((out / "llm_usage.json").read_text())["total"]
    assert usage["unusable"] == 0 and usage["requests"] == answered  # FunSearch draws 4 answers, then samples them


def test_prose_answers_in_a_batch_of_funsearch_answers_count_as_unusable_and_the_others_do_not(tmp_path, monkeypatch):
    from llm_chat_server import ChatServer

    from raise_plugin.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    out = tmp_path / "run"
    with ChatServer(answer=_chat_versions(itertools.count(1), threading.Lock())) as server:
        server.script("ok", "prose", "ok", "prose")  # the first batch of four: two samples, two without
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["run", "--task", "ovrp", "--method", "funsearch", "--no-robust", "--budget", "6",
                     "--nominal", "1", "--llm", "openai:test-model", "--out", str(out), "--no-progress",
                     "--no-validation-trace", "--no-host-profiler"])
    assert code == 0
    samples = (out / "samples.jsonl").read_text().splitlines()
    usage = json.loads((out / "llm_usage.json").read_text())["total"]
    assert usage["calls"] == 8 and len(samples) == 1 + 6 and usage["unusable"] == 2
