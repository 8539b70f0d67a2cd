"""What callbacks read from the run: the instance set, programs, snapshots, the LLM."""
from __future__ import annotations

from .hooks import InstanceView, ProgramView, RunSnapshot
from .instances import InstanceEntry

__all__ = ["RunView"]


class RunView:
    @property
    def budget(self) -> int | None:
        return self._max_sample_nums

    @property
    def instance_set(self) -> tuple[InstanceView, ...]:
        entries, _ = self._instances.state()
        return tuple(e.view() for e in entries)

    def instance_entries(self) -> list[InstanceEntry]:
        return self._instances.state()[0]

    def nominal_instances(self) -> list:
        return list(self._instances.nominal)

    def program_text(self, program_id: str) -> str:
        """The full program text (imports and the function) of a program the run has met."""
        rec = self._book.get(program_id)
        if rec is None:
            raise KeyError(f"unknown program {program_id!r}")
        return rec.text

    def program_metrics(self, program_id: str) -> dict:
        return self._book.metrics(program_id)

    def snapshot(self) -> RunSnapshot:
        with self._gate.cond:
            return self._snapshot_locked()

    def best(self) -> ProgramView | None:
        return self.snapshot().best

    @property
    def llm(self):
        """The LLM back-end behind the host's sampler (its ``usage`` ledger, when it keeps one)."""
        sampler = self._sampler  # EoH's sampler keeps it as ``_sampler``, the others' ``SampleTrimmer`` as ``_llm``
        return getattr(sampler, "_sampler", None) or getattr(sampler, "_llm", None)

    def start_engine(self) -> None:
        """Start the workers that run programs, before the run's first event: a place that cannot take
        programs (a Dask address that answers as no scheduler) ends the run in one line, closed as its
        end closes it, not each sample as an answer without a usable program."""
        try:
            self.engine_executor
        except BaseException:
            self.close()
            raise

    @property
    def engine_executor(self):
        """The executor whose sandboxed workers run the run's programs (started on first use;
        the inner search fans its evaluations out over it); ``None`` when programs run in the
        calling thread (``safe_evaluate=False``)."""
        engine = getattr(self._evaluator, "engine", None)
        return None if engine is None else engine.executor

    @property
    def evaluations(self) -> int:
        """Program-instance evaluations so far (the cache saves the rest)."""
        return self._evaluator.evaluations
