"""What LLM calls cost: a model's price per million tokens (``Price``), the list prices the paper
uses (``DEFAULT_PRICES``) and the price a model name is charged at (``price_for``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

__all__ = ["Price", "DEFAULT_PRICES", "price_for"]


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


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: an exact entry, else the longest entry it starts with
    (``gpt-5-mini-2025-08-07`` is priced as ``gpt-5-mini``)."""
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None
