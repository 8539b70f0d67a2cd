"""MoH's prompts (a MoH-style baseline), written for this plugin: EoH's operators with per-variant
scores, and the meta prompt that asks for the next optimiser plan.

The code operators carry EoH's phrases (``raise_plugin.llm.operators.OPERATOR_PHRASES``): e1
"totally different form", e2 "backbone idea", m1 "modified version", m2 "different parameter
settings", creation "create a new heuristic". Each parent is shown with its mean metric on
each training variant, so the model sees where a heuristic generalises and where it does not.
The meta prompt is a text prompt (its answer is a plan, not code): it avoids the code
operators' phrases and asks for a "hint".
"""
from __future__ import annotations

from typing import Sequence

from .prompt_parts import answer as _answer

__all__ = ["init", "e1", "e2", "m1", "m2", "meta", "PLAN_FORMAT"]

PLAN_FORMAT = "operators: m1, e1, m2; selection: tournament"

_MULTI = ("We train one heuristic on {k} task variants at once ({variants}); a heuristic is scored by its mean "
          "over all of them, so it must do well on every variant, not on one.")

# a parent: (code, description, score, {variant: mean metric})
Parent = tuple[str, str, float, dict]


def _parent(i: int, p: Parent) -> str:
    code, algorithm, score, per_variant = p
    means = ", ".join(f"{v} {m:.4g}" for v, m in per_variant.items())
    return (f"No. {i} heuristic (score {score:.6g}; mean metric per variant, lower is better: {means}): "
            f"{algorithm or '(no description)'}\n```python\n{code.strip()}\n```")


def _intro(task: str, variants: Sequence[str]) -> str:
    return f"{task}\n{_MULTI.format(k=len(variants), variants=', '.join(variants))}"


def init(task: str, variants: Sequence[str], header: str) -> str:
    return f"""{_intro(task, variants)}
Create a new heuristic for this problem.
{_answer(header)}"""


def e1(task: str, variants: Sequence[str], parents: Sequence[Parent], header: str) -> str:
    shown = "\n".join(_parent(i + 1, p) for i, p in enumerate(parents))
    return f"""{_intro(task, variants)}
I have {len(parents)} existing heuristics:
{shown}
Please help me create a new heuristic that has a totally different form from the given ones.
{_answer(header)}"""


def e2(task: str, variants: Sequence[str], parents: Sequence[Parent], header: str) -> str:
    shown = "\n".join(_parent(i + 1, p) for i, p in enumerate(parents))
    return f"""{_intro(task, variants)}
I have {len(parents)} existing heuristics:
{shown}
Please help me create a new heuristic that does well on every variant and can be motivated from them.
1. Firstly, identify the common backbone idea in the provided heuristics.
{_answer(header)}"""


def m1(task: str, variants: Sequence[str], parent: Parent, header: str) -> str:
    return f"""{_intro(task, variants)}
I have one heuristic:
{_parent(1, parent)}
Please assist me in creating a new heuristic that has a different form but can be a modified version of the heuristic provided, aiming at the variant where it is weakest.
{_answer(header)}"""


def m2(task: str, variants: Sequence[str], parent: Parent, header: str) -> str:
    return f"""{_intro(task, variants)}
I have one heuristic:
{_parent(1, parent)}
Please identify the main parameters and create a new heuristic that has different parameter settings of the score function provided.
{_answer(header)}"""


def meta(task: str, variants: Sequence[str], history: Sequence[dict], operators: Sequence[str],
         selections: Sequence[str]) -> str:
    """Ask for the next optimiser plan, given the plans tried and what each gained."""
    tried = "\n".join(f"- operators: {', '.join(h['operators'])}; selection: {h['selection']}: best score "
                      f"{h['gain']:+.4g} over {h['samples']} samples" for h in history) or "- none yet"
    return f"""{_intro(task, variants)}
You design the heuristic optimiser that evolves these heuristics (meta-optimisation). An optimiser is a plan:
the operators it applies each round, in order, and how it selects parents.
Operators: e1 (a new heuristic unlike two parents), e2 (the idea two parents share, developed), m1 (one
parent changed in form), m2 (one parent with its constants retuned).
Selections: {', '.join(selections)}.
Plans tried so far, with the change of the best training score they made (higher is better):
{tried}
Write the plan of a better optimiser. Give it as a hint of one line, exactly in this form, using only the
operators {', '.join(operators)}:
{PLAN_FORMAT}"""
