"""Which operator a prompt belongs to: one phrase table for EoH, ReEvo and PartEvo prompts.

Method authors: a prompt is attributed to the first row whose phrase occurs in it
(case-insensitive), so put one of these phrases in each operator's prompt. ``kind``
says what the offline sampler answers: ``create`` (a seed program), ``perturb``
(new numeric constants), ``modify`` (insert/delete/replace a term), ``crossover``
(recombine parents) or ``text`` (a short hint, no code).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["OperatorPhrases", "OPERATOR_PHRASES", "infer_operator", "operator_kind", "prompt_text"]


@dataclass(frozen=True)
class OperatorPhrases:
    name: str
    kind: str
    phrases: tuple[str, ...]


# Order matters: more specific rows first (an EoH e2 prompt also says "totally different
# form"; a ReEvo crossover prompt also carries a "[Reflection]" section).
OPERATOR_PHRASES: tuple[OperatorPhrases, ...] = (
    # EoH (host prompts, llm4ad.method.eoh.prompt, and the paper's appendix templates)
    OperatorPhrases("m2", "perturb", ("different parameter settings",)),
    OperatorPhrases("m1", "modify", ("modified version",)),
    OperatorPhrases("e2", "crossover", ("backbone idea", "motivated from them")),
    OperatorPhrases("e1", "crossover", ("totally different form",)),
    # ReEvo code operators
    OperatorPhrases("crossover", "crossover", ("write an improved function", "[improved code]")),
    OperatorPhrases("mutation", "modify", ("write a mutated function", "elitist mutation")),
    # PartEvo code operators
    OperatorPhrases("cross_niche", "crossover", ("cross-niche", "from another niche")),
    OperatorPhrases("local_global_elite", "crossover", ("local-global-elite", "global best")),
    OperatorPhrases("summary_guided", "modify", ("summary-guided", "according to the summary")),
    OperatorPhrases("reflection_rewrite", "modify", ("rewrite the heuristic", "according to the reflection")),
    # text answers (no code): ReEvo reflections, PartEvo reflection and summary
    OperatorPhrases("long_reflection", "text", ("long-term reflection", "write constructive hints")),
    OperatorPhrases("short_reflection", "text", ("respond with some hints", "short-term reflection")),
    OperatorPhrases("summary", "text", ("summarize", "summarise", "write a summary")),
    OperatorPhrases("reflection", "text", ("reflection", "hint")),
    # creation (EoH i1, the paper's Create, ReEvo/PartEvo initialisation)
    OperatorPhrases("i1", "create", ("create a new heuristic", "describe your new algorithm",
                                     "implement the following python function")),
)

_KIND = {row.name: row.kind for row in OPERATOR_PHRASES}


def prompt_text(prompt: Any) -> str:
    """The text of a prompt: a string, or a list of chat messages joined in order.

    Messages may carry their text under ``content`` (OpenAI) or ``message`` (the host's
    ``EoHPrompt.create_instruct_prompt``).
    """
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        prompt = [prompt]
    parts = []
    for message in prompt or []:
        if isinstance(message, dict):
            text = message.get("content", message.get("message", ""))
        else:
            text = message
        if isinstance(text, list):  # content parts: [{"type": "text", "text": ...}]
            text = "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in text)
        parts.append("" if text is None else str(text))
    return "\n".join(parts)


def infer_operator(prompt: Any) -> str:
    """The operator name of ``prompt`` (see ``OPERATOR_PHRASES``), or ``"other"``."""
    text = prompt_text(prompt).lower()
    for row in OPERATOR_PHRASES:
        if any(phrase in text for phrase in row.phrases):
            return row.name
    return "other"


def operator_kind(name: str) -> str:
    """What kind of answer operator ``name`` asks for; unknown names ask for code (``create``)."""
    return _KIND.get(name, "create")
