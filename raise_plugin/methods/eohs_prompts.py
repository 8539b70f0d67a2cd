"""EoH-S's prompts (an EoH-S-style baseline), written for this plugin: EoH's operators with complementary context.

The operator phrases are EoH's (``raise_plugin.llm.operators.OPERATOR_PHRASES``): e1
"totally different form", e2 "backbone idea", m1 "modified version", m2 "different
parameter settings", creation "create a new heuristic". Each parent is shown with the
share of training instances on which it is the best member of the heuristic set, so the
model knows which parents complement each other. Code prompts end with the empty function.
"""
from __future__ import annotations

from typing import Sequence

from .prompt_parts import answer as _answer

__all__ = ["init", "e1", "e2", "m1", "m2"]

_SET = ("We evolve a set of heuristics that complement each other over {n} diverse training instances: "
        "a heuristic is valuable when it improves the set's best result on some instances.")


def _parent(i: int, code: str, algorithm: str, score: float, wins: int, n: int) -> str:
    return (f"No. {i} heuristic (mean score {score:.6g}; best of the set on {wins} of {n} instances): "
            f"{algorithm or '(no description)'}\n```python\n{code.strip()}\n```")


def _parents(parents: Sequence[tuple[str, str, float, int]], n: int) -> str:
    return "\n".join(_parent(i + 1, c, a, s, w, n) for i, (c, a, s, w) in enumerate(parents))


def init(task: str, n: int, header: str) -> str:
    return f"""{task}
{_SET.format(n=n)}
Create a new heuristic for this problem.
{_answer(header)}"""


def e1(task: str, parents: Sequence[tuple[str, str, float, int]], n: int, header: str) -> str:
    """A new heuristic of a totally different form from complementary parents."""
    return f"""{task}
{_SET.format(n=n)}
I have {len(parents)} existing heuristics that are strong on different instances:
{_parents(parents, n)}
Please help me create a new heuristic that has a totally different form from the given ones.
{_answer(header)}"""


def e2(task: str, parents: Sequence[tuple[str, str, float, int]], n: int, header: str) -> str:
    """The common backbone of complementary parents, then a heuristic motivated by it."""
    return f"""{task}
{_SET.format(n=n)}
I have {len(parents)} existing heuristics that are strong on different instances:
{_parents(parents, n)}
Please help me create a new heuristic that combines their strengths and can be motivated from them.
1. Firstly, identify the common backbone idea in the provided heuristics.
{_answer(header)}"""


def m1(task: str, parent: tuple[str, str, float, int], n: int, header: str) -> str:
    """A modified version of one member."""
    return f"""{task}
{_SET.format(n=n)}
I have one heuristic of the set:
{_parents([parent], n)}
Please assist me in creating a new heuristic that has a different form but can be a modified version of the heuristic provided, aiming at the instances where the set is weak.
{_answer(header)}"""


def m2(task: str, parent: tuple[str, str, float, int], n: int, header: str) -> str:
    """The same structure with different parameter settings."""
    return f"""{task}
{_SET.format(n=n)}
I have one heuristic of the set:
{_parents([parent], n)}
Please identify the main parameters and create a new heuristic that has different parameter settings of the score function provided.
{_answer(header)}"""
