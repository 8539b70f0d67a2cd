"""The programs-database shape: llm4ad's ``FunSearch`` (islands of clusters keyed by score).

Every program stored in any island is re-scored when the instance set changes, and the
islands are rebuilt from the new scores: programs regroup into clusters by their robust
score (cluster sampling and island resets then use it), a program that fails on the new set
leaves its island, and each island's best is recomputed. A sample scored on an older set
is scored on the current one before it is filed. The database draws from numpy's global
RNG (the host's design); the adapter seeds it with the run's seed when the run starts, the
only way to make its island and cluster choices repeatable without editing the host.
"""
from __future__ import annotations

import math

import numpy as np
from llm4ad.method.funsearch import FunSearch

from .shape import with_mixin
from .tap import TappedShape

__all__ = ["DatabaseShape"]


class _RobustDatabase:
    """Mixed in front of the host database's class: files a sample under its current score."""

    def register_function(self, function, island_id, score):
        method = self._raise_method
        rec = method.record_of(function)

        def file(current, version, ids):
            if current is not None and math.isfinite(current):
                function.score = current
                super(_RobustDatabase, self).register_function(function, island_id, current)
        method.with_current_score(rec, file)


class DatabaseShape(TappedShape):
    describe = "programs database with islands (every stored program re-scored, islands rebuilt)"

    @classmethod
    def fits(cls, method_cls: type) -> bool:
        return issubclass(method_cls, FunSearch)

    def _install_shape(self) -> None:
        self._database = with_mixin(self._database, _RobustDatabase, "Robust")
        self._database._raise_method = self
        super()._install_shape()

    def run(self):
        np.random.seed(self.seed % 2**32)
        return super().run()

    def _stored(self) -> list[tuple[int, object]]:
        """``(island, function)`` for every program in the database."""
        return [(i, f) for i, island in enumerate(self._database.islands)
                for cluster in island.clusters.values() for f in cluster.programs]

    def _search_members(self) -> tuple[list, list]:
        seen, members = set(), []
        for _, f in self._stored():
            if id(f) not in seen:
                seen.add(id(f))
                members.append(f)
        return members, []

    def _shown(self) -> list:
        """The ``generation_size`` best distinct programs (the database may hold hundreds)."""
        best, texts = [], set()
        for f in sorted(self._search_members()[0], key=lambda f: f.score, reverse=True):
            text = self.program_text_of(f)
            if text not in texts:
                texts.add(text)
                best.append(f)
            if len(best) == self._generation_size:
                break
        return best

    def _admission_supported(self) -> str | None:
        return "every valid sample enters an island, clustered by its score: every sample meets the whole set"

    def _admit(self, function) -> bool:
        return False  # the database filed it already (``_RobustDatabase``)

    def _scores_changed(self) -> None:
        db = self._database
        stored = self._stored()
        finite = [f for _, f in stored if f.score is not None and math.isfinite(f.score)]
        if not finite:
            return  # nothing survives the new set: keep the islands as they were
        fallback = max(finite, key=lambda f: f.score)
        for i, island in enumerate(db.islands):
            programs = [f for j, f in stored if j == i and math.isfinite(f.score)] or [fallback]
            count = island.get_num_programs()
            island._clusters = {}
            for f in programs:
                island.register_function(f, f.score)
            island._num_programs = count  # keep the host's sampling-temperature schedule
            best = max(programs, key=lambda f: f.score)
            db._best_score_per_island[i] = best.score
            db._best_program_per_island[i] = best
            db._best_scores_per_test_per_island[i] = best.score

    def _restore_members(self, members: list, pending: list, generation: int, samples: int) -> None:
        super()._restore_members(members, pending, generation, samples)
        for function in members + pending:
            self._database.register_function(function, None, function.score)
