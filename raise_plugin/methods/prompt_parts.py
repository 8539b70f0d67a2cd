"""Prompt pieces every plugin method shares: the expert role, a fenced code block, and the
answer format the host's sampler parses (a boxed one-sentence description, then the function)."""
from __future__ import annotations

__all__ = ["EXPERT", "code_block", "answer"]

EXPERT = ("You are an expert in the domain of optimization heuristics. Your task is to design heuristics "
          "that can effectively solve optimization problems.")

_ANSWER = """1. First, describe your new algorithm and main steps in one sentence. The description must be inside within boxed {{}}.
2. Next, implement the following Python function:
{header}
Do not give additional explanations."""


def code_block(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def answer(header: str) -> str:
    """The closing instructions of a code prompt, ending with the empty function to implement."""
    return _ANSWER.format(header=header.rstrip())
