"""Genes to candidates for one task and nominal set: ``Adversary`` decodes a gene vector into a
distribution within the eps-ball (mixture, then projection) and an instance length."""
from __future__ import annotations

import numpy as np

from tasks.common.shift import is_distribution

from . import genes as _genes
from .projection import Projection, project
from .adversary_config import SearchConfig

__all__ = ["Adversary"]


class Adversary:
    """Decodes genes into feasible distributions and instance lengths for one task and nominal set."""

    def __init__(self, task, config: SearchConfig, nominal: list | None = None):
        self.task = task
        self.config = config
        self.nominal = list(task.nominal_instances() if nominal is None else nominal)
        if not self.nominal:
            raise ValueError("the nominal set is empty")
        self.cells = int(task.shift.cells)
        self.histograms = np.stack([np.asarray(task.histogram(s), dtype=float) for s in self.nominal])
        if self.histograms.shape[1] != self.cells:
            raise ValueError(f"task histograms have {self.histograms.shape[1]} cells, shift.cells is {self.cells}")
        self.p_bar = self.histograms.mean(axis=0)  # p_bar, the mean nominal histogram
        self.nominal_length = int(round(np.mean([task.instance_length(s) for s in self.nominal])))
        # the cells that hold an integer of the range instances are drawn over (the others carry no mass there)
        self.occupied = np.asarray(task.shift.occupied(task.high_of(dict(task.nominal_params))), dtype=bool)
        self.length_can_change = bool(task.length_can_change) and config.length == "gene"

    @property
    def dimension(self) -> int:
        """Genes per candidate: 18 for the basis encoding, K + 1 for the flat one."""
        return _genes.GENES if self.config.encoding == "basis" else self.cells + 1

    def mixture(self, genes) -> np.ndarray:
        """p_adv before projection (anchored at p_bar unless ``constraint="none"``), with no mass on a cell
        that holds no integer of the range: an instance drawn from it could not show that mass, and the
        distance reported would not be the distance of what is drawn."""
        anchor = None if self.config.constraint == "none" else self.p_bar
        if self.config.encoding == "basis":
            p = _genes.mixture(genes, anchor, self.cells)
        else:
            p = _genes.flat_mixture(genes, anchor, self.cells)
        if self.occupied.all():
            return p
        kept = np.where(self.occupied, p, 0.0)
        if kept.sum() > 0:
            return kept / kept.sum()
        return self.p_bar.copy() if anchor is not None else self.occupied / self.occupied.sum()

    def decode(self, genes) -> tuple[Projection, int]:
        """The candidate's distribution (projected as configured) and its instance length."""
        genes = np.asarray(genes, dtype=float)
        p_adv = self.mixture(genes)
        mode = "none" if self.config.constraint == "none" else self.config.projection
        projected = project(p_adv, self.histograms, self.config.epsilon, mode)
        if not is_distribution(projected.distribution):
            raise AssertionError("projection left the probability simplex")
        length = _genes.instance_length(genes[-1], self.nominal_length, self.length_can_change)
        return projected, length
