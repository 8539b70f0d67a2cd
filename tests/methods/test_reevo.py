"""ReEvo: reflections feed the operators, and they are part of the method's state."""
from __future__ import annotations

import json
import re

_CODE = re.compile(r"```python\n(.*?)\n```", re.S)


def test_crossover_prompts_carry_both_parents_and_the_short_term_reflection(method_factory):
    method = method_factory("reevo", "ojsp", budget=30, pop_size=4)
    method.run()
    calls = method._sampler._sampler.calls
    crossovers = 0
    for k, (op, prompt, _) in enumerate(calls):
        if op != "crossover":
            continue
        crossovers += 1
        ref_op, ref_prompt, hint = calls[k - 1]
        assert ref_op == "short_reflection"
        worse, better = _CODE.findall(ref_prompt)
        assert prompt.index("[Worse code]") < prompt.index(worse) < prompt.index("[Better code]") < prompt.index(better)
        assert " ".join(hint.split()) in prompt
        assert prompt.rstrip().endswith("Do not give additional explanations.")
    assert crossovers >= 5


def test_mutation_prompts_carry_the_elite_and_the_long_term_reflection(method_factory):
    method = method_factory("reevo", "ojsp", budget=30, pop_size=4)
    method.run()
    calls = method._sampler._sampler.calls
    long_term = None
    mutations = 0
    for op, prompt, answer in calls:
        if op == "long_reflection":
            long_term = " ".join(answer.split())
            assert "prior long-term reflection" in prompt
        elif op == "mutation":
            mutations += 1
            assert long_term is not None and long_term in prompt
            assert "[Elite code]" in prompt and len(_CODE.findall(prompt)) == 1
    assert mutations >= 4
    assert method.long_term_reflection == long_term


def test_long_term_reflection_condenses_the_previous_one_and_recent_short_terms(method_factory):
    method = method_factory("reevo", "ovrp", budget=30, pop_size=4)
    method.run()
    calls = method._sampler._sampler.calls
    longs = [k for k, c in enumerate(calls) if c[0] == "long_reflection"]
    assert len(longs) >= 2
    prev_answer = " ".join(calls[longs[0]][2].split())
    second = calls[longs[1]][1]
    assert prev_answer in second
    shorts = [" ".join(c[2].split()) for c in calls[longs[0] + 1:longs[1]] if c[0] == "short_reflection"]
    assert shorts and all(s in second for s in shorts)


def test_reflections_are_saved_and_restored_with_the_state(method_factory):
    method = method_factory("reevo", "ojsp", budget=20)
    method.run()
    state = json.loads(json.dumps(method.state_dict()))
    assert state["method"] == "reevo"
    assert state["long_term_reflection"] == method.long_term_reflection != ""
    assert any(r["kind"] == "short_term" for r in state["reflection_log"])
    fresh = method_factory("reevo", "ojsp", budget=20)
    fresh.load_state_dict(state)
    assert fresh.long_term_reflection == method.long_term_reflection
    assert fresh.short_term_reflections == method.short_term_reflections
    assert fresh.rng.bit_generator.state == method.rng.bit_generator.state


def test_a_resumed_robust_run_gets_its_reflections_back(tmp_path):
    import json

    from raise_plugin.config import RunConfig
    from raise_plugin.runner import resume_run, start_run

    out = tmp_path / "run"
    start_run(RunConfig(task="ojsp", method="reevo", robust=True, tau=1, inner_population=4, inner_generations=1,
                        budget=16, pop_size=4, seed=0, out=str(out))).run()
    saved = json.loads((out / "checkpoint.json").read_text())["method"]
    assert saved["long_term_reflection"] and saved["rounds"] > 0
    method = resume_run(out, budget=20)
    assert method.long_term_reflection == saved["long_term_reflection"]
    assert method.short_term_reflections == saved["short_term_reflections"]
    method.run()
    assert json.loads((out / "summary.json").read_text())["samples"] == 20


class ThinkingReflector:
    """A reasoning model: every reflection it writes comes after its thinking."""

    def __init__(self, recorder):
        self.inner = recorder

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def draw_sample(self, prompt, *args, **kwargs):
        answer = self.inner.draw_sample(prompt)
        if "respond with some hints" in prompt or "constructive hints" in prompt:
            return "<think>Hmm, let me compare the two codes line by line first.</think>\n" + answer
        return answer


def test_a_reflections_thinking_is_not_quoted_in_the_next_prompt(method_factory, recorder):
    from llm4ad.base import LLM

    llm = type("Thinking", (ThinkingReflector, LLM), {})(recorder(0))
    method = method_factory("reevo", "ojsp", budget=12, pop_size=4, llm=llm)
    method.run()
    code_prompts = [p for op, p, _ in llm.inner.calls if op in ("crossover", "mutation")]
    assert code_prompts and method.long_term_reflection
    assert not any("let me compare" in p for p in code_prompts)
    assert "let me compare" not in method.long_term_reflection
