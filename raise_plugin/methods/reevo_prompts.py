"""ReEvo's prompts (Ye et al., NeurIPS 2024), written for this plugin: creation, reflections, crossover, mutation.

Each code prompt ends with the empty function to implement (its last ``def``); each
carries its operator's phrase from ``raise_plugin.llm.operators.OPERATOR_PHRASES`` so
the offline sampler can tell them apart: crossover "write an improved function",
mutation "write a mutated function", short-term reflection "respond with some hints",
long-term reflection "write constructive hints".
"""
from __future__ import annotations

from typing import Sequence

from .prompt_parts import EXPERT, code_block as _code, answer as _answer

__all__ = ["EXPERT", "init", "short_term_reflection", "crossover", "long_term_reflection", "mutation"]

REFLECTOR = ("You are an expert in the domain of optimization heuristics. Your task is to give hints to "
             "design better heuristics.")


def init(task: str, seed_code: str, header: str) -> str:
    """Population initialisation: a new heuristic from the task and the seed heuristic."""
    return f"""{EXPERT}
{task}

[Seed heuristic]
{_code(seed_code)}

Create a new heuristic for this problem, different from the seed heuristic, that performs better.
{_answer(header)}"""


def short_term_reflection(task: str, name: str, worse: str, worse_score: float, better: str,
                          better_score: float) -> str:
    """Short-term reflection: compare the worse and the better parent, answer with a short hint."""
    return f"""{REFLECTOR}
{task}

Below are two versions of the function `{name}`. The better one scores {better_score:.6g} and the worse one {worse_score:.6g} on the training instances (higher is better).

[Worse code]
{_code(worse)}

[Better code]
{_code(better)}

You respond with some hints for designing better heuristics, based on the two code versions and using less than 20 words. Do not write code."""


def crossover(task: str, name: str, worse: str, better: str, reflection: str, header: str) -> str:
    """Crossover guided by the short-term reflection on the two parents."""
    return f"""{EXPERT}
{task}

[Worse code]
{_code(worse)}

[Better code]
{_code(better)}

[Reflection]
{reflection}

[Improved code]
Please write an improved function `{name}`, combining the strengths of the two versions above and following the reflection.
{_answer(header)}"""


def long_term_reflection(task: str, prior: str, recent: Sequence[str]) -> str:
    """Long-term reflection: condense the prior long-term reflection and the recent short-term ones."""
    insights = "\n".join(f"- {r}" for r in recent) or "- (none)"
    return f"""{REFLECTOR}
{task}

Below is your prior long-term reflection on designing heuristics for this problem.
{prior or "(none yet)"}

Below are some newly gained insights.
{insights}

Write constructive hints for designing better heuristics, based on prior reflections and new insights and using less than 50 words. Do not write code."""


def mutation(task: str, name: str, elite: str, elite_score: float, reflection: str, header: str) -> str:
    """Elitist mutation of the best heuristic, guided by the long-term reflection."""
    return f"""{EXPERT}
{task}

[Prior reflection]
{reflection or "(none yet)"}

[Elite code] (the best heuristic so far, score {elite_score:.6g})
{_code(elite)}

Please write a mutated function `{name}`: a new variant of the elite code that follows the prior reflection.
{_answer(header)}"""
