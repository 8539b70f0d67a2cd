"""A task's paper tables as data: which slices of its test suite the columns of each table are.

The harness turns these into tables; the task only says what it wants shown, so the
harness needs no knowledge of any task.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TableLayout"]

BY = ("family", "size")


@dataclass(frozen=True)
class TableLayout:
    """One table: rows are methods, columns are slices of the suite, cells are mean metrics.

    ``by="family"``: one column per test family, over the datasets at the sizes ``at``
    (all sizes when empty); the table is left out when no dataset has those sizes.
    ``by="size"``: one column per combination of the size parameters ``keys`` present
    in the results (every parameter present when ``keys`` is empty), averaged over the
    families; with one key and a ``label`` such as ``"{}-machine"`` the columns are
    named by it, else ``"C=100, n=1000"``. ``average``: a last column averaging the others.
    """

    key: str
    title: str
    by: str = "family"
    at: dict[str, Any] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    label: str | None = None
    average: bool = True

    def __post_init__(self):
        if self.by not in BY:
            raise ValueError(f"TableLayout {self.key!r}: by must be one of {', '.join(BY)}, got {self.by!r}")
        if self.label is not None and len(self.keys) != 1:
            raise ValueError(f"TableLayout {self.key!r}: a column label needs exactly one size key")
