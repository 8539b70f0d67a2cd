"""Shared fixtures for the method tests: the offline sampler behind a prompt recorder, small evaluations."""
from __future__ import annotations

import logging

import pytest
from llm4ad.base import LLM

from raise_plugin.llm import make_llm
from raise_plugin.llm.operators import infer_operator, operator_kind
from raise_plugin.methods import METHODS
from tasks import get_task
from tasks.obp.instances import weibull_instances

PLUGIN_METHODS = ("reevo", "partevo", "eohs", "moh")


class Recorder(LLM):
    """Forwards to the offline sampler and keeps every (operator, prompt, answer) in order."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.inner = make_llm("offline", seed=seed)
        self.calls: list[tuple[str, str, str]] = []

    def draw_sample(self, prompt, *args, **kwargs) -> str:
        answer = self.inner.draw_sample(prompt)
        self.calls.append((infer_operator(prompt), prompt, answer))
        return answer

    def code_calls(self):
        return [c for c in self.calls if operator_kind(c[0]) != "text"]

    def text_calls(self):
        return [c for c in self.calls if operator_kind(c[0]) == "text"]


def evaluation_for(task_name: str, **kwargs):
    """The training set used here: OBP 2 Weibull instances of 500 items, OJSP/OVRP their nominal sets."""
    task = get_task(task_name)
    instances = weibull_instances(count=2, num_items=500) if task_name == "obp" else None
    kwargs.setdefault("safe_evaluate", False)
    return task.evaluation(instances=instances, **kwargs)


def make_method(name: str, task_name: str = "ojsp", *, budget: int = 24, pop_size: int = 4, seed: int = 0,
                llm=None, cls=None, evaluation=None, **kwargs):
    """A method on a small training set; EoH-S gets a 6-instance diverse set, MoH a second variant as large
    as the training set (500 items for OBP)."""
    if name == "eohs":
        kwargs.setdefault("diverse_instances", 6)
        if task_name == "obp":
            kwargs.setdefault("diverse_params", {"num_items": 500})
    if name == "moh" and task_name == "obp":
        kwargs.setdefault("second_params", {"num_items": 500})
    cls = cls or METHODS[name]
    return cls(llm=llm if llm is not None else Recorder(seed), evaluation=evaluation or evaluation_for(task_name),
               max_sample_nums=budget, pop_size=pop_size, seed=seed, **kwargs)


@pytest.fixture(autouse=True)
def _quiet_method_logs():
    logging.getLogger("raise_plugin.methods").setLevel(logging.ERROR)
    yield


@pytest.fixture
def recorder():
    return Recorder


@pytest.fixture
def method_factory():
    return make_method


@pytest.fixture
def evaluation_factory():
    return evaluation_for
