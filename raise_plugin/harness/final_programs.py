"""The program each finished run hands to compare's report: its robust best, or the member of its
last population chosen on the validation suite (never on the test suite)."""
from __future__ import annotations

import json
from pathlib import Path

from raise_plugin.selection import selects_on
from raise_plugin.settings import fallback
from raise_plugin.validation import select_final

__all__ = ["best_program", "final_program"]


@selects_on("nominal", "robust")  # the run's best on the set it trained on (grown by adversarial instances with RAISE)
def best_program(run_dir: Path) -> str | None:
    data = json.loads((run_dir / "summary.json").read_text())
    best = data.get("best") or {}
    return best.get("program")


def final_program(run_dir: Path, task, select_on: str = fallback("select_on"), workers: int | None = None) -> str | None:
    """The program a run hands to the report: its robust best (what the run returns; the
    nominal best of a plain run), or the member of its last population with the best
    validation metric (``select_final``, recorded in the run directory)."""
    if select_on == "robust":
        return best_program(run_dir, select_on="robust")
    chosen = select_final(run_dir, task, workers=workers)
    return None if chosen is None else chosen["program"]
