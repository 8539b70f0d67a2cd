"""What ``compare`` returns: its rows, tables, tests and files, with its variants addressed by key.

Labels (``"RAISE-EoH (eps=0.002)"``) are for display: the tables, the CSV's ``method`` column.
A variant is addressed by its key (``"eoh-plain"``, ``"eoh-raise-eps0.002"``, the name of its run
directory), by ``variant("eoh", robust=True, epsilon=0.002)``, or by a baseline's name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path

from raise_plugin.errors import UserError
from raise_plugin.harness.paper_tables import Table
from raise_plugin.harness.stats import Comparison, compare_paired
from raise_plugin.harness.variants import ABLATIONS, Variant

__all__ = ["CompareResult"]


@dataclass
class CompareResult:
    out: Path
    rows: list[dict]
    tables: dict[str, Table]
    files: list[Path] = field(default_factory=list)
    comparisons: list = field(default_factory=list)  # stats.Comparison: each method vs best baseline and plain twin
    jobs: list = field(default_factory=list)  # job_queue.JobRecord of every job this call ran (none: all were done)
    variants: list[Variant] = field(default_factory=list)  # the trained configurations, in plan order
    baselines: list[str] = field(default_factory=list)     # the task's baselines, evaluated beside them
    failures: list = field(default_factory=list)  # job_queue.JobRecord of every job that failed (its cells left out)

    @property
    def figures(self) -> list[Path]:
        """The figures written (convergence.png, adversarial_distributions.png, and each in the other
        formats asked for)."""
        return [f for f in self.files if f.suffix in (".png", ".pdf", ".svg")]

    @property
    def report(self) -> Path:
        return self.out / "report.md"

    def variant(self, method: str, *, robust: bool | None = None, epsilon: float | None = None,
                ablation: str | None = None) -> Variant:
        """The variant of ``method`` (``"eoh"``) plain or robust, at ``epsilon`` (needed only when
        several were trained), with ``ablation`` (a key of ``variants.ABLATIONS``, e.g. ``"flat"``);
        or ``method`` given as a variant's key (``"eoh-raise-eps0.002"``) or label.
        A ``UserError`` names what matched nothing or more than one."""
        if robust is not None and not isinstance(robust, bool):  # robust="no" was taken as True
            raise UserError(f"variant: robust must be True, False or None (either, as epsilon or ablation says), "
                            f"got {robust!r}")
        epsilon = _radius(epsilon)
        exact = [v for v in self.variants if method in (v.key, v.label)]
        if exact and robust is epsilon is ablation is None:
            return exact[0]
        if ablation is not None and ablation not in ABLATIONS:
            raise UserError(f"ablation {ablation!r}: choose from {', '.join(ABLATIONS)}")
        robust = True if robust is None and (epsilon is not None or ablation is not None) else bool(robust)
        found = [v for v in self.variants if v.method == method and v.robust == robust
                 and (epsilon is None or v.epsilon == epsilon)
                 and (v.key.endswith(f"-{ablation}") if ablation else v.kind != "ablation")]
        if len(found) == 1:
            return found[0]
        wanted = f"{method} {'robust' if robust else 'plain'}" + (f" at eps {epsilon:g}" if epsilon else "") + (
            f" with ablation {ablation}" if ablation else "")
        if not found:
            raise UserError(f"no variant {wanted} in this compare; its variants: {self._keys()}")
        raise UserError(f"{wanted} matches {', '.join(v.key for v in found)}; give epsilon=")

    def label(self, name) -> str:
        """The display label of a variant (a ``Variant``, key or label) or a baseline's name: the
        name its rows, tables and comparisons carry."""
        variant = self._resolve(name)
        return name if variant is None else variant.label

    def paired(self, method, reference, *, by_seed: bool | None = None) -> Comparison:
        """The paired test of ``method`` against ``reference`` (each a variant's key, label or
        ``Variant``, or a baseline's name) over (seed, instance) on the whole test suite, as
        ``stats.compare_paired``: ``mean`` (method - reference; negative: method better), the
        bootstrap interval ``low``..``high``, Wilcoxon ``p``, ``verdict``.

        ``by_seed`` (default: chosen from the reference) pairs seed s with seed s, as for a
        trained reference (a plain twin, another variant); a baseline is deterministic and its
        one result per instance is paired with every seed."""
        if by_seed is not None and not isinstance(by_seed, bool):
            raise UserError(f"paired: by_seed must be True, False or None (chosen from the reference), got {by_seed!r}")
        mine, theirs = self._resolve(method), self._resolve(reference)
        trained = theirs is not None
        if mine is None and trained:  # paired seed by seed, it kept seed 0's pairs alone
            raise UserError(f"paired: {method!r} is a baseline: give the trained {reference!r} first, "
                            f"paired({reference!r}, {method!r}) (the difference is then theirs minus the baseline's)")
        if by_seed and (mine is None or theirs is None):  # it dropped every pair but seed 0's
            raise UserError(f"paired: {method if mine is None else reference!r} is a baseline, one result per "
                            "instance for every seed: it cannot be paired seed by seed (leave by_seed unset)")
        twin = (trained and mine is not None and mine.robust and not theirs.robust
                and mine.method == theirs.method)
        relation = "plain twin" if twin else "" if trained else "baseline"
        return compare_paired(self.rows, self.label(method), self.label(reference), relation,
                              by_seed=trained if by_seed is None else by_seed)

    def _resolve(self, name) -> Variant | None:
        """The variant ``name`` stands for, or None for a baseline."""
        if isinstance(name, Variant):
            return name
        if name in self.baselines:
            return None
        return self.variant(name)

    def _keys(self) -> str:
        return ", ".join([v.key for v in self.variants] + list(self.baselines))


def _radius(epsilon) -> float | None:
    """A variant's eps as a number (its text too: ``"0.002"``), or ``None``; else a one-line ``UserError`` (a
    string that is none was a ValueError from the message naming what matched nothing)."""
    if epsilon is None:
        return None
    try:
        if isinstance(epsilon, (Real, str)) and not isinstance(epsilon, bool):
            return float(epsilon)
    except ValueError:
        pass
    raise UserError(f"variant: epsilon must be a number, got {epsilon!r}")
