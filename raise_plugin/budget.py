"""Caps for paid endpoints: a callback that ends a run cleanly once its LLM spend reaches a cap.

``LLMBudget(max_cost_usd=5.0, max_llm_calls=2000)`` reads the LLM back-end's usage ledger
after every sample. When a cap is reached it asks the run to stop (``method.request_stop``):
no new sample starts, the samples under way are registered, everything is saved, and the
summary says why. The sample that crosses a cap is kept, so the spend can pass the cap by
what the samples under way cost (one call per sampler thread). A resumed run counts what
was spent before (the run directory's ledger is merged into the new back-end's), so
``raise-ahd resume RUN_DIR --max-cost-usd HIGHER`` continues up to the new cap.
"""
from __future__ import annotations

import math

from .callback import Callback, RunSnapshot

__all__ = ["LLMBudget", "llm_usage_total"]


def llm_usage_total(method) -> dict:
    """``{"calls": ..., "cost_usd": ...}`` of the run's LLM back-end (zeros when it keeps no ledger)."""
    usage = getattr(method.llm, "usage", None)
    if usage is None or not hasattr(usage, "total"):
        return {"calls": 0, "cost_usd": 0.0}
    total = usage.total()
    return {"calls": int(total.calls), "cost_usd": float(total.cost_usd)}


class LLMBudget(Callback):
    """Stop the run when the LLM cost reaches ``max_cost_usd`` dollars or the calls ``max_llm_calls``."""

    def __init__(self, max_cost_usd: float | None = None, max_llm_calls: int | None = None):
        if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not math.isfinite(max_cost_usd)
                                         or max_cost_usd <= 0):
            raise ValueError(f"max_cost_usd must be a number of dollars > 0, got {max_cost_usd!r}")
        if max_llm_calls is not None and (not isinstance(max_llm_calls, int) or isinstance(max_llm_calls, bool)
                                          or max_llm_calls < 1):
            raise ValueError(f"max_llm_calls must be an integer >= 1, got {max_llm_calls!r}")
        self.max_cost_usd = max_cost_usd
        self.max_llm_calls = max_llm_calls

    @property
    def state_key(self) -> str:
        return "LLMBudget"

    def reason(self, method) -> str | None:
        """Why the run must stop now, or ``None``."""
        used = llm_usage_total(method)
        # a relative tolerance: ten calls of $0.01 add up to 0.09999999999999999
        if self.max_cost_usd is not None and used["cost_usd"] >= self.max_cost_usd * (1 - 1e-9):
            return (f"the LLM cost cap of ${self.max_cost_usd:g} is reached (${used['cost_usd']:.4f} spent); "
                    f"continue with `raise-ahd resume RUN_DIR --max-cost-usd HIGHER`")
        if self.max_llm_calls is not None and used["calls"] >= self.max_llm_calls:
            return (f"the cap of {self.max_llm_calls} LLM calls is reached ({used['calls']} made); "
                    f"continue with `raise-ahd resume RUN_DIR --max-llm-calls HIGHER`")
        return None

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        self._check(method)

    def on_sample_evaluated(self, method, snapshot: RunSnapshot, sample) -> None:
        self._check(method)

    def _check(self, method) -> None:
        why = self.reason(method)
        if why is not None:
            method.request_stop(why)
