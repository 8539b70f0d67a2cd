"""The harness from Python: ``compare(...)`` is ``raise-ahd compare`` with keywords."""
from __future__ import annotations

from raise_plugin.settings import default

from .compare import CompareResult, run_compare
from .compare_config import CompareConfig

__all__ = ["compare"]


def compare(task: str = default("task"), *, seeds: int | tuple = default("seeds"), quiet: bool = False, **fields) -> CompareResult:
    """Train every method plain and with RAISE, evaluate them and the baselines on the test suite,
    and write the tables, figures and report to ``out`` (``CompareConfig``'s fields as keywords).

    ``task`` is a name or a file or module reference (``"my_task.py:MyTask"``); ``seeds`` a
    count (seeds 0..N-1) or the seeds themselves. The result holds the tables
    (``result.tables[name].markdown()``), the paired tests (``result.comparisons``), the
    figures' paths (``result.figures``) and the report's (``result.report``).
    """
    if isinstance(seeds, int):
        seeds = tuple(range(seeds))
    if "methods" in fields and isinstance(fields["methods"], str):
        fields["methods"] = tuple(m.strip() for m in fields["methods"].split(",") if m.strip())
    if "epsilons" in fields and isinstance(fields["epsilons"], (int, float)):
        fields["epsilons"] = (float(fields["epsilons"]),)
    return run_compare(CompareConfig(task=task, seeds=tuple(seeds), **fields), quiet=quiet)
