"""A run's settings and records applied to its back-end's ledger: the caps of its budget
(``hold_caps``) and the usage a run directory recorded before the request journal (``carry_usage``)."""
from __future__ import annotations

import json
from pathlib import Path

from ..config import BudgetSettings
from ..errors import UserError

__all__ = ["hold_caps", "carry_usage"]


def hold_caps(llm, budget: BudgetSettings) -> None:
    """The caps of a run's ``budget`` that ``llm``'s ledger holds at every request, retries included
    (``LLMBudget``'s docstring); a cost cap needs the model's price (a one-line ``UserError`` naming
    the flag)."""
    backend = getattr(llm, "inner", llm)
    if budget.max_cost_usd is not None and getattr(backend, "priced", True) is False:
        raise UserError(f"--max-cost-usd: model {backend.model!r} has no known price, so its cost cannot be "
                        f"capped; give one with --price {backend.model}=IN,OUT (dollars per million tokens)")
    usage = getattr(backend, "usage", None)
    if usage is not None:
        usage.max_requests, usage.max_cost_usd, usage.max_failed_requests = (
            budget.max_llm_calls, budget.max_cost_usd, budget.max_failed_requests)


def carry_usage(llm, path: Path) -> None:
    """Add the usage recorded in ``path`` (a run's ``llm_usage.json``) to ``llm``'s ledger, so cost
    caps count it: run directories written before the request journal, which the ledger reads itself."""
    usage = getattr(llm, "usage", None)
    if usage is None or not hasattr(usage, "merge") or not Path(path).exists():
        return
    try:
        usage.merge(json.loads(Path(path).read_text()))
    except (ValueError, TypeError, KeyError):
        pass  # a damaged ledger: the new one starts from zero (resume has said what it repaired)
