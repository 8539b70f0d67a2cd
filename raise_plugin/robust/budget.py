"""Caps for paid endpoints: a callback that puts LLM spend caps on the run's usage ledger.

``LLMBudget(max_cost_usd=5.0, max_llm_calls=2000)`` hands its caps to the LLM back-end's
ledger when the run starts. The ledger checks them before every request, retries included,
so the endpoint receives at most ``max_llm_calls`` requests, and no request starts once the
spend has reached ``max_cost_usd`` (the request under way when it is reached is paid for,
so the spend can pass the cap by one answer per sampler). A cap reached stops the run
cleanly: no new sample starts, the samples under way are registered, everything is saved,
and the summary says why. A resumed run counts what was spent before (the ledger reads the
run directory's request journal), so with the same caps it stops at once, and
``raise-ahd resume RUN_DIR --max-cost-usd HIGHER`` (or ``--max-llm-calls``) continues.
"""
from __future__ import annotations

import math

from ..config import BudgetSettings
from ..llm.errors import LLMAborted, LLMCapReached
from .hooks import Callback, RunSnapshot

__all__ = ["LLMBudget", "llm_usage_total"]


def llm_usage_total(method) -> dict:
    """``{"calls", "requests", "cost_usd"}`` of the run's LLM back-end (zeros without a ledger)."""
    usage = getattr(method.llm, "usage", None)
    if usage is None or not hasattr(usage, "total"):
        return {"calls": 0, "requests": 0, "cost_usd": 0.0}
    total = usage.total()
    return {"calls": int(total.calls), "requests": int(total.calls + total.retries),
            "cost_usd": float(total.cost_usd)}


class LLMBudget(Callback):
    """Cap the run's LLM spend at ``max_cost_usd`` dollars and ``max_llm_calls`` requests."""

    def __init__(self, max_cost_usd: float | None = None, max_llm_calls: int | None = None):
        if max_cost_usd is not None and (isinstance(max_cost_usd, bool) or not math.isfinite(max_cost_usd)
                                         or max_cost_usd <= 0):
            raise ValueError(f"max_cost_usd must be a number of dollars > 0, got {max_cost_usd!r}")
        if max_llm_calls is not None and (not isinstance(max_llm_calls, int) or isinstance(max_llm_calls, bool)
                                          or max_llm_calls < 1):
            raise ValueError(f"max_llm_calls must be an integer >= 1, got {max_llm_calls!r}")
        self.max_cost_usd = max_cost_usd
        self.max_llm_calls = max_llm_calls

    @classmethod
    def of(cls, budget: BudgetSettings) -> "LLMBudget":
        """The caps of a run's ``budget`` settings."""
        return cls(budget.max_cost_usd, budget.max_llm_calls)

    @property
    def state_key(self) -> str:
        return "LLMBudget"

    def reason(self, method) -> str | None:
        """Why the run must stop now, or ``None``."""
        usage = self._ledger(method)
        if usage is None:
            return None
        try:
            usage.check()
        except LLMCapReached as exc:
            return str(exc)
        except LLMAborted:  # a failing endpoint: the run's LLM guard ends the run as failed
            return None
        return None

    def on_run_start(self, method, snapshot: RunSnapshot) -> None:
        usage = self._ledger(method)
        if usage is not None:
            usage.max_requests = self.max_llm_calls
            usage.max_cost_usd = self.max_cost_usd
        self._check(method)

    def on_sample_evaluated(self, method, snapshot: RunSnapshot, sample) -> None:
        self._check(method)

    @staticmethod
    def _ledger(method):
        usage = getattr(method.llm, "usage", None)
        return usage if usage is not None and hasattr(usage, "check") else None

    def _check(self, method) -> None:
        why = self.reason(method)
        done = method.budget is not None and method.samples >= method.budget  # it ends there anyway: not stopped
        if why is not None and not done:
            method.request_stop(why)
