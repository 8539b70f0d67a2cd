"""The incumbent shape: llm4ad's ``HillClimb`` (one incumbent it improves) and ``RandSample``
(independent samples, a best-so-far).

Neither keeps more than one program, so the adapter keeps an archive: the
``generation_size`` best distinct programs by their score on the current instance set.
After every change of the set the archive is re-scored, and HillClimb's incumbent
(``_best_function_found``, the program its prompts improve) becomes the archive's best:
an incumbent that fails on the adversarial instance is replaced. RandSample's prompt never
changes (the template), so robustness changes only which program the run reports as best.
"""
from __future__ import annotations

from llm4ad.method.hillclimb import HillClimb
from llm4ad.method.randsample import RandSample

from .tap import TappedShape

__all__ = ["IncumbentShape"]


class IncumbentShape(TappedShape):
    describe = "incumbent (re-scored, replaced by the best of an archive of generation_size programs)"

    @classmethod
    def fits(cls, method_cls: type) -> bool:
        return issubclass(method_cls, (HillClimb, RandSample))

    def _install_shape(self) -> None:
        self._archive: list = []
        super()._install_shape()

    def _search_members(self) -> tuple[list, list]:
        return list(self._archive), []

    def _admit(self, function) -> bool:
        text = self.program_text_of(function)
        if any(self.program_text_of(f) == text for f in self._archive):
            return True
        self._archive.append(function)
        self._scores_changed()
        return False

    def _admission_supported(self) -> str | None:
        return None

    def _admission_bound(self) -> float:
        """The archive's last score once it is full: a new program joins it last and the archive
        keeps its ``generation_size`` best, ties to the earlier (HillClimb's incumbent is then
        reset to the archive's best, whatever the host compared the sample's score with)."""
        if len(self._archive) < self._generation_size:
            return float("-inf")
        score = self._archive[self._generation_size - 1].score
        return float("-inf") if score is None or score != score else float(score)

    def _scores_changed(self) -> None:
        self._archive.sort(key=lambda f: f.score, reverse=True)
        del self._archive[self._generation_size:]
        if self._archive and hasattr(self, "_best_function_found"):
            self._best_function_found = self._archive[0]
