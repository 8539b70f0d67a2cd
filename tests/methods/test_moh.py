"""The MoH-style baseline: two training variants, per-variant prompts, and a meta level that reads the
plans an LLM writes and falls back on built-in plans when it cannot (the offline sampler)."""
from __future__ import annotations

import numpy as np
import pytest
from llm4ad.base import LLM

from raise_plugin.llm.operators import infer_operator, operator_kind
from raise_plugin.methods.moh import BUILTIN_PLANS, MoH, parse_plan, second_variant
from tasks import get_task
from tasks.common.families import sample_family


def test_the_second_variant_is_a_validation_family_at_nominal_sizes_never_a_test_family():
    task = get_task("obp")
    built = second_variant(task, 3, "gamma", num_items=400)
    for i, inst in enumerate(built):
        assert np.array_equal(inst["items"], sample_family("gamma", 400, 200, np.random.default_rng([0, i])))
    with pytest.raises(ValueError, match="validation family"):
        second_variant(task, 3, "uniform")


@pytest.mark.parametrize("task_name", ["knapsack", "cvrp", "ojsp"])
def test_every_candidate_is_scored_on_both_variants(method_factory, evaluation_factory, task_name):
    ev = evaluation_factory(task_name)
    nominal = len(ev.instances)
    method = method_factory("moh", task_name, budget=12, pop_size=4, evaluation=ev)
    assert len(ev.instances) == 2 * nominal  # MoH's cost: twice EoH's instance evaluations
    assert method.variants == {"nominal": (0, nominal), "gamma": (nominal, 2 * nominal)}
    method.run()
    best = method._usable()[0]
    per_variant = method.per_variant(best)
    assert set(per_variant) == {"nominal", "gamma"}
    assert -best.score == pytest.approx(np.mean(list(per_variant.values())))


def test_prompts_show_each_parent_per_variant_and_keep_the_operator_phrases(method_factory):
    method = method_factory("moh", "ovrp", budget=20, pop_size=4)
    method.run()
    calls = method._sampler._sampler.calls
    code = [(op, p) for op, p, _ in calls if operator_kind(op) != "text"]
    assert {op for op, _ in code} >= {"e1", "e2", "m1", "m2"}
    assert all("2 task variants at once (nominal, gamma)" in p for _, p in code)
    assert any("mean metric per variant, lower is better: nominal" in p for _, p in code)
    meta = [p for op, p, _ in calls if "meta-optimisation" in p]
    assert meta and all(operator_kind(infer_operator(p)) == "text" for p in meta)


def test_offline_the_meta_level_falls_back_on_the_built_in_plans(method_factory):
    method = method_factory("moh", "ovrp", budget=40, pop_size=4, meta_every=1)
    method.run()
    assert method.meta_calls >= 3 and method.meta_answers == 0
    used = [(tuple(h["operators"]), h["selection"]) for h in method.plan_history]
    assert used[:4] == list(BUILTIN_PLANS)[:len(used[:4])]
    assert all(h["source"] == "built-in" for h in method.plan_history)


class PlanWriter(LLM):
    """An LLM that answers the meta prompt with a plan and every code prompt with the offline sampler."""

    def __init__(self):
        super().__init__()
        from raise_plugin.llm import make_llm
        self.inner = make_llm("offline", seed=0)

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        if "meta-optimisation" in prompt:
            return "A good optimiser tunes first. operators: m2, m2, e1; selection: best"
        return self.inner.draw_sample(prompt)


class ChattyPlanWriter(PlanWriter):
    """A chat model's plan: thinking, then the plan in a fence, in bold, after 900 characters of reasons."""

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        if "meta-optimisation" in prompt:
            return ("<think>Tuning helps; operators: e1; selection: rank?</think>\n" + "Reasons. " * 100
                    + "\n```\n**operators:** m2, m2, e1; **selection:** best\n```")
        return self.inner.draw_sample(prompt)


def test_a_plan_written_in_markdown_after_long_reasons_is_read(method_factory):
    method = method_factory("moh", "ovrp", budget=12, pop_size=4, llm=ChattyPlanWriter(), meta_every=1)
    method.run()
    assert method.meta_answers == method.meta_calls >= 1
    assert method.plan == (("m2", "m2", "e1"), "best")


def test_a_plan_the_llm_writes_is_the_optimiser_that_runs_next(method_factory):
    method = method_factory("moh", "ovrp", budget=24, pop_size=4, llm=PlanWriter(), meta_every=1)
    method.run()
    assert method.meta_answers == method.meta_calls >= 1
    assert method.plan == (("m2", "m2", "e1"), "best")
    assert method.operator_counts.get("m2", 0) > method.operator_counts.get("m1", 0)
    state = method.state_dict()
    again = method_factory("moh", "ovrp", budget=24, pop_size=4)
    again.load_state_dict(state)
    assert again.plan == method.plan and again.plan_history == method.plan_history


@pytest.mark.parametrize("text, plan", [
    ("operators: e1, m2; selection: tournament", (("e1", "m2"), "tournament")),
    ("Plan -> Operators: M1,M1 ; Selection: Rank.", (("m1", "m1"), "rank")),
    ("operators: x9; selection: rank", None),
    ("operators: e1; selection: greedy", None),
    ("use more mutation", None),
    ("**operators:** e1, m2; **selection:** best", (("e1", "m2"), "best")),
    ("```\noperators: `m1`, `m2`; selection: `tournament`\n```", (("m1", "m2"), "tournament")),
    ("operators: [e1, e2]; selection: uniform", (("e1", "e2"), "uniform")),
    ("- Operators: e1, e2 and m1\n- Selection: rank", (("e1", "e2", "m1"), "rank")),
    ("Tried: operators: e1, e2, m1, m2; selection: rank (+0.01). Mine: operators: m2, m2; selection: best",
     (("m2", "m2"), "best")),
    ("<think>maybe operators: e1; selection: rank</think>operators: m1; selection: best", (("m1",), "best")),
    ("Okay, so operators: e1; selection: rank is weak.</think>\noperators: e2; selection: uniform",
     (("e2",), "uniform")),
])
def test_parse_plan_reads_the_plan_format_through_a_chat_models_markdown(text, plan):
    assert parse_plan(text) == plan


def test_moh_refuses_an_evaluation_without_metrics(recorder):
    class Plain:
        template_program = get_task("obp").template_program
        task_description = ""

    with pytest.raises(TypeError, match="metrics"):
        MoH(llm=recorder(0), evaluation=Plain(), max_sample_nums=4, pop_size=2)
