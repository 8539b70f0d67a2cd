"""Where a run's compute went, and its summary (``summary.json``)."""
from __future__ import annotations

import time

from ..llm import asks_llm

__all__ = ["Accounting"]

_PARTS = ("outer", "inner", "rescore")
_SUMMARY_COUNTS = ("evaluations", "evaluation_calls", "stale_samples_reevaluated")  # beside ``compute``
_COUNTERS = ("_evaluations", "_seconds", "rejected_early", "evaluations_saved", "evaluations", "evaluation_calls",
             "stale_samples_reevaluated")


class Accounting:
    def record_inner_search(self, evaluations: int, seconds: float) -> None:
        """Account an inner (adversarial) search: its instance evaluations and wall time."""
        with self._inner_lock:
            self._inner[0] += int(evaluations)
            self._inner[1] += float(seconds)

    def compute(self) -> dict:
        """Instance evaluations and wall time in the outer loop, the inner searches and re-scoring.

        ``outer + inner + rescore`` is every instance evaluation of the run; the inner loop's
        share counts the inner searches and the re-scoring they cause. A resumed run adds
        what was spent before the interruption.
        """
        counts = self._evaluator.counts()
        with self._inner_lock:
            counts["inner"] = list(self._inner)
        before = self._compute_before
        out = {}
        for part in _PARTS:
            out[f"{part}_evaluations"] = counts[part][0] + int(before.get(f"{part}_evaluations", 0))
        for part in _PARTS:
            out[f"{part}_seconds"] = counts[part][1] + float(before.get(f"{part}_seconds", 0.0))
        total_e = sum(out[f"{p}_evaluations"] for p in _PARTS)
        total_s = sum(out[f"{p}_seconds"] for p in _PARTS)
        out["total_evaluations"] = total_e
        out["total_seconds"] = total_s
        out["inner_loop_share_evaluations"] = (out["inner_evaluations"] + out["rescore_evaluations"]) / total_e if total_e else 0.0
        out["inner_loop_share_seconds"] = (out["inner_seconds"] + out["rescore_seconds"]) / total_s if total_s else 0.0
        with self._inner_lock:
            sampler = self._sampler_seconds
        out["sampler_seconds"] = sampler + float(before.get("sampler_seconds", 0.0))
        if self.early_rejection == "on":  # (absent otherwise: the records of such runs are unchanged)
            out["rejected_early"] = self._evaluator.rejected + int(before.get("rejected_early", 0))
            out["evaluations_saved"] = self._evaluator.saved + int(before.get("evaluations_saved", 0))
        out["wall_seconds"] = time.time() - self._started + float(before.get("wall_seconds", 0.0))
        return out

    def work(self, counts_only: bool = False) -> dict:
        """The run's work so far (``compute`` and the evaluation counters of the summary); each
        sample line records its counts (``counts_only``: no times, so a line is the same in every
        run under a seed). A resumed run starts its counters from the latest such record, so work
        done after the last checkpoint is not lost from them by a kill."""
        before = self._compute_before
        now = {"evaluations": self._evaluator.evaluations, "evaluation_calls": self._evaluator.calls,
               "stale_samples_reevaluated": self._stale_samples}
        out = {**self.compute(), **{k: now[k] + int(before.get(k, 0)) for k in _SUMMARY_COUNTS}}
        if counts_only:
            out = {k: v for k, v in out.items() if isinstance(v, int)}
        return out

    def restore_work(self, *records: dict | None) -> None:
        """Start the counters from the latest of ``records`` (a checkpoint's ``compute``, the
        last sample's ``work``): every counter only grows, so the latest is the largest."""
        before: dict = {}
        for record in records:
            for key, value in (record or {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key.endswith(_COUNTERS):
                    before[key] = max(before.get(key, value), value)
        self._compute_before = before

    def time_per_sample(self, compute: dict | None = None) -> dict:
        """Where a sample's wall time goes, in seconds per sample: the LLM (or the offline
        sampler), evaluating it, the inner searches, re-scoring after refreshes, and the rest
        (the host's bookkeeping, callbacks, the run directory). With several samplers the
        parts overlap, and ``other`` is what the wall time leaves (it can reach 0)."""
        c = compute or self.compute()
        n = max(1, self.samples)
        # the ledger's time covers every call, those whose answer gave no sample included
        usage = getattr(self.llm, "usage", None)
        llm_seconds = usage.total().seconds if hasattr(usage, "total") else 0.0
        parts = {"llm": max(c["sampler_seconds"], llm_seconds), "evaluation": c["outer_seconds"],
                 "inner_search": c["inner_seconds"], "rescore": c["rescore_seconds"]}
        out = {k: v / n for k, v in parts.items()}
        out["other"] = max(0.0, c["wall_seconds"] - sum(parts.values())) / n
        out["wall"] = c["wall_seconds"] / n
        return out

    def summary(self, finished: bool = False) -> dict:
        snap = self.snapshot()
        work = self.work()
        compute = {k: v for k, v in work.items() if k not in _SUMMARY_COUNTS}
        best = snap.best
        entries, version = self._instances.state()
        llm = self.llm
        usage = llm.usage.to_dict() if hasattr(getattr(llm, "usage", None), "to_dict") else None
        describe = getattr(llm, "describe", None)
        return {
            "finished": finished,
            "stopped": self.stop_reason,
            "failure": self.failure,
            "samples": snap.samples,
            "repeated_samples": self.repeated_samples,
            "budget": snap.budget,
            "generations": snap.generation,
            "refreshes": self._refreshes,
            "best": None if best is None else {"program_id": best.program_id, "robust_score": best.score,
                                               "algorithm": best.algorithm,
                                               "program": self.program_text(best.program_id)},
            "instance_set_version": version,
            "instance_set": [{"instance_id": e.instance_id, "origin": e.origin, "distance": e.distance,
                              "generation": e.generation} for e in entries],
            **{k: work[k] for k in _SUMMARY_COUNTS},
            "hook_errors": self.hook_errors,
            "compute": compute,
            "early_rejection": self.early_rejection,
            "time_per_sample": self.time_per_sample(compute),
            "seconds": compute["wall_seconds"],  # over every process of the run, as its other times
            "llm": ((describe() if callable(describe) else type(llm).__name__) if asks_llm(self)
                    else "none asked: the method writes its programs itself"),
            "llm_usage": usage,
            **{k: v for cb in self.callbacks for k, v in getattr(cb, "summary_fields", dict)().items()},
        }
