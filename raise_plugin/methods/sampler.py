"""The methods' sampler: the host's, reading answers with ``AnswerReader``, each sampled function stamped with
the calling thread's tags."""
from __future__ import annotations

import threading

from llm4ad.base import LLM, Function

from ..llm.answers import ReadingSampler

__all__ = ["TracingSampler"]


class TracingSampler(ReadingSampler):
    """The host's sampler reading answers as ``ReadingSampler`` does; stamps each sampled function with the
    calling thread's tags (operator, niche, ...) and keeps it, so the method sees the sample it just paid for."""

    def __init__(self, llm: LLM, template_program):
        super().__init__(llm, template_program)
        self._local = threading.local()

    def get_thought_and_function(self, prompt):
        thought, func = super().get_thought_and_function(prompt)
        if func is not None:
            for key, value in getattr(self._local, "tags", {}).items():
                setattr(func, key, value)
        self._local.last = func
        return thought, func

    def begin(self, tags: dict) -> None:
        self._local.tags = tags
        self._local.last = None

    def end(self) -> Function | None:
        func = getattr(self._local, "last", None)
        self._local.tags = {}
        self._local.last = None
        return func
