"""A run's settings and records applied to its back-end's ledger: the caps of its budget
(``hold_caps``), the usage a run directory recorded before the request journal (``carry_usage``),
what a run has sent (``run_spent``) and a resume's caps against it (``check_caps_left``)."""
from __future__ import annotations

import json
from pathlib import Path

from ..config import BudgetSettings, bad_field
from ..errors import UserError
from .usage import REPLAY, REQUESTS_FILE, UsageLedger

__all__ = ["hold_caps", "carry_usage", "run_spent", "check_caps_left", "LEDGER_FIELDS"]

LEDGER_FIELDS = ("requests", "input_tokens", "output_tokens", "cost_usd")


def hold_caps(llm, budget: BudgetSettings) -> None:
    """The caps of a run's ``budget`` that ``llm``'s ledger holds at every request, retries included
    (``LLMBudget``'s docstring); a cost cap needs the model's price (a one-line ``UserError`` naming
    the flag)."""
    backend = getattr(llm, "inner", llm)
    if budget.max_cost_usd is not None and getattr(backend, "priced", True) is False:
        raise UserError(f"--max-cost-usd: model {backend.model!r} has no known price, so its cost cannot be "
                        f"capped; give one with --price {backend.model}=IN,OUT (dollars per million tokens) when "
                        f"the run starts (a resume keeps the run's prices: cap its calls with --max-llm-calls)")
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


def run_spent(run_dir: Path) -> dict:
    """What the run in ``run_dir`` has sent to its endpoint: requests (retries included), tokens and
    dollars, from its request journal (every request, even of a run killed mid-way), else its
    ``llm_usage.json``; zeros for a run that sent nothing (offline, a replay, not started)."""
    run_dir = Path(run_dir)
    try:
        recorded = json.loads((run_dir / "llm_usage.json").read_text())
    except (OSError, ValueError):
        recorded = {}
    if recorded.get("backend") == REPLAY:  # answers read from a recording: nothing was spent
        return dict.fromkeys(LEDGER_FIELDS, 0)
    if (run_dir / REQUESTS_FILE).exists():
        ledger = UsageLedger()
        ledger.load_journal(run_dir / REQUESTS_FILE)
        recorded = ledger.to_dict()
    total = recorded.get("total") or {}
    return {name: total.get(name, 0) for name in LEDGER_FIELDS}


def check_caps_left(run_dir: Path, changes: dict) -> None:
    """A call or cost cap that a resume of ``run_dir`` sets (``changes``) at or below what the run has
    already sent (``run_spent``), so that it could send nothing more: a ``ConfigError`` naming it, as
    a budget below the samples taken is. The journal is read only when a cap is set."""
    if changes.get("max_llm_calls") is None and changes.get("max_cost_usd") is None:
        return
    spent = run_spent(run_dir)
    for name, used, unit in (("max_llm_calls", spent["requests"], "requests the run has sent"),
                             ("max_cost_usd", spent["cost_usd"], "dollars the run has spent")):
        if changes.get(name) is not None and changes[name] <= used:
            bad_field(name, changes[name], f"must be above the {used:g} {unit} (resume raises a cap; without one "
                                           "it continues as recorded)")
