"""PartEvo's prompts (Hu et al., 2025), written for this plugin: creation, reflection, summary and four operators.

Every operator prompt carries the niche context (which niche the parent is in, the
niche's size and best score, the best score over all niches) and its phrase from
``raise_plugin.llm.operators.OPERATOR_PHRASES``: "rewrite the heuristic" (reflection
then rewrite), "summary-guided", "cross-niche", "local-global-elite"; the text prompts
say "reflection" (on one parent) and "write a summary" (elites versus poor programs).
Code prompts end with the empty function to implement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .prompt_parts import EXPERT, code_block as _code, answer as _answer

__all__ = ["NicheContext", "init", "reflection", "reflection_rewrite", "summary", "summary_guided",
           "cross_niche", "local_global_elite"]


@dataclass(frozen=True)
class NicheContext:
    """Where a parent sits in the niche partition."""

    niche: int
    niches: int
    size: int
    niche_best: float
    overall_best: float

    def text(self) -> str:
        return (f"[Niche context]\nThe population is partitioned into {self.niches} niches of similar heuristics "
                f"(by code structure and per-instance results). The parent belongs to niche {self.niche + 1} "
                f"of {self.niches} ({self.size} members, best score {self.niche_best:.6g}); the best score over "
                f"all niches is {self.overall_best:.6g} (scores: higher is better).")


def _scored(label: str, code: str, score: float) -> str:
    return f"[{label}] (score {score:.6g})\n{_code(code)}"


def init(task: str, seed_code: str, header: str) -> str:
    """Population initialisation from the task and the template heuristic."""
    return f"""{EXPERT}
{task}

[Template heuristic]
{_code(seed_code)}

Create a new heuristic for this problem that performs better than the template heuristic.
{_answer(header)}"""


def reflection(task: str, context: NicheContext, parent: str, score: float) -> str:
    """A reflection on one parent (text): what limits it and what could help."""
    return f"""{EXPERT}
{task}

{context.text()}

{_scored("Heuristic", parent, score)}

Give a reflection on this heuristic: what in its scoring rule limits its results on the training instances, and which change would most likely improve it. Use at most 40 words and no code."""


def reflection_rewrite(task: str, context: NicheContext, parent: str, score: float, reflection_text: str,
                       header: str) -> str:
    """Reflection operator, second step: rewrite the parent following the reflection on it."""
    return f"""{EXPERT}
{task}

{context.text()}

{_scored("Heuristic", parent, score)}

[Reflection on this heuristic]
{reflection_text}

Please rewrite the heuristic according to the reflection, keeping what works and changing what the reflection points at.
{_answer(header)}"""


def summary(task: str, elites: Sequence[tuple[str, float]], poor: Sequence[tuple[str, float]]) -> str:
    """The global summary (text): what separates the archive's elites from its poor programs."""
    shown = [_scored(f"Elite {i + 1}", c, s) for i, (c, s) in enumerate(elites)]
    shown += [_scored(f"Poor {i + 1}", c, s) for i, (c, s) in enumerate(poor)]
    body = "\n\n".join(shown)
    return f"""{EXPERT}
{task}

Below are the elite heuristics and some poor heuristics from the archive of every heuristic evaluated so far.

{body}

Write a summary, in at most 60 words, of the design choices that distinguish the elites from the poor heuristics: what to keep and what to avoid. Do not write code."""


def summary_guided(task: str, context: NicheContext, parent: str, score: float, summary_text: str,
                   header: str) -> str:
    """Summary-guided operator: improve the parent with the global summary of the archive."""
    return f"""{EXPERT}
{task}

{context.text()}

[Global summary of elites versus poor heuristics]
{summary_text}

{_scored("Heuristic", parent, score)}

This is a summary-guided step: please write an improved version of this heuristic that applies the design choices of the summary.
{_answer(header)}"""


def cross_niche(task: str, context: NicheContext, parent: str, score: float, other: str, other_score: float,
                other_niche: int, header: str) -> str:
    """Cross-niche crossover: the parent and a parent from another niche."""
    return f"""{EXPERT}
{task}

{context.text()}

{_scored(f"Heuristic from niche {context.niche + 1}", parent, score)}

{_scored(f"Heuristic from another niche (niche {other_niche + 1})", other, other_score)}

This is a cross-niche crossover: the two heuristics come from different niches and follow different ideas. Please create a new heuristic that combines the strengths of both.
{_answer(header)}"""


def local_global_elite(task: str, context: NicheContext, parent: str, score: float, niche_best: str,
                       niche_best_score: float, global_best: str, global_best_score: float, header: str) -> str:
    """Local-global-elite operator: the parent learns from its niche's best and the global best."""
    return f"""{EXPERT}
{task}

{context.text()}

{_scored("Parent heuristic", parent, score)}

{_scored(f"Best heuristic of niche {context.niche + 1} (local elite)", niche_best, niche_best_score)}

{_scored("Global best heuristic (global elite)", global_best, global_best_score)}

This is a local-global-elite step: please create a new heuristic that improves the parent by learning from the local elite of its niche and from the global best.
{_answer(header)}"""
