"""The usage ledger: LLM calls, tokens, cost, failures and retries per operator (thread-safe)."""
from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Mapping

__all__ = ["Price", "DEFAULT_PRICES", "OperatorUsage", "UsageLedger"]


@dataclass(frozen=True)
class Price:
    """US dollars per one million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self):
        if self.input_per_million < 0 or self.output_per_million < 0:
            raise ValueError(f"prices must be >= 0, got {self.input_per_million} / {self.output_per_million}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6


# List prices the paper uses (its cost appendix); users add or override entries.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-5-mini": Price(0.25, 2.00),
}


@dataclass
class OperatorUsage:
    calls: int = 0
    failures: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: "OperatorUsage") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class UsageLedger:
    """Counts per operator; one ledger per back-end, shared by its sampler threads.

    ``calls`` counts finished requests (successful or failed), ``failures`` those that
    gave no usable answer, ``retries`` the extra attempts made on transient errors.
    ``cost_usd`` uses the back-end's price table; ``priced`` is False when the model
    had no entry (the cost then stays 0 and the summary says so).
    """

    backend: str = ""
    model: str = ""
    priced: bool = True
    _per_operator: dict[str, OperatorUsage] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _last: threading.local = field(default_factory=threading.local, repr=False, compare=False)

    def record(self, operator: str, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0,
               failed: bool = False, retries: int = 0) -> None:
        """Count one finished call of ``operator``."""
        with self._lock:
            entry = self._per_operator.setdefault(operator, OperatorUsage())
            entry.calls += 1
            entry.failures += int(bool(failed))
            entry.retries += int(retries)
            entry.input_tokens += int(input_tokens or 0)
            entry.output_tokens += int(output_tokens or 0)
            entry.cost_usd += float(cost_usd or 0.0)
        self._last.call = {"operator": operator, "input_tokens": int(input_tokens or 0),
                           "output_tokens": int(output_tokens or 0), "cost_usd": float(cost_usd or 0.0),
                           "failed": bool(failed), "retries": int(retries)}

    def last_call(self) -> dict | None:
        """The counts of the latest call recorded by the calling thread."""
        return getattr(self._last, "call", None)

    def per_operator(self) -> dict[str, OperatorUsage]:
        """A snapshot copy, operator name -> counts."""
        with self._lock:
            return {name: OperatorUsage(**asdict(u)) for name, u in sorted(self._per_operator.items())}

    def total(self) -> OperatorUsage:
        total = OperatorUsage()
        for usage in self.per_operator().values():
            total.add(usage)
        return total

    def to_dict(self) -> dict:
        """JSON-ready summary for a run directory's ``summary.json``."""
        per_op = self.per_operator()
        total = OperatorUsage()
        for usage in per_op.values():
            total.add(usage)
        return {
            "backend": self.backend,
            "model": self.model,
            "priced": self.priced,
            "total": _rounded(asdict(total)),
            "per_operator": {name: _rounded(asdict(u)) for name, u in per_op.items()},
        }

    def summary(self) -> str:
        """One line: calls, failures, retries, tokens and cost."""
        t = self.total()
        cost = f"${t.cost_usd:.4f}" if self.priced else "cost unknown (no price for this model)"
        who = " ".join(x for x in (self.backend, self.model) if x)
        return (f"LLM usage{' (' + who + ')' if who else ''}: {t.calls} calls, {t.failures} failed, "
                f"{t.retries} retries, {t.input_tokens} input + {t.output_tokens} output tokens, {cost}")

    def merge(self, data: Mapping) -> None:
        """Add the per-operator counts of a ``to_dict()`` (e.g. of a resumed run)."""
        with self._lock:
            for name, counts in dict(data.get("per_operator", {})).items():
                self._per_operator.setdefault(name, OperatorUsage()).add(OperatorUsage(**counts))


def _rounded(d: dict) -> dict:
    d = dict(d)
    d["cost_usd"] = round(d["cost_usd"], 8)
    return d
