"""A compare's LLM caps over the whole study and its ledger: what each run has spent (read from its
run directory), and what a training run about to start may spend of what is left.

The caps (``max_cost_usd``, ``max_llm_calls``) hold for the sum over the study's runs. A run is
given, when it starts, what it spent before (a resumed run's caps count its whole history) plus its
share of what is left: what is left divided among the job slots not taken, so runs under way at
once never hold more than the cap between them; when a run ends, what it did not spend is left for
the next. When nothing is left, a run does not start: its job fails in one line saying which cap
was reached, and a higher cap continues the study.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import math
import threading
from pathlib import Path

from raise_plugin.harness.job_place import JobFailed
from raise_plugin.llm.run_usage import LEDGER_FIELDS, run_spent

__all__ = ["LEDGER_FILE", "study_ledger", "StudyBudget", "CappedPlace"]

LEDGER_FILE = "llm_ledger.json"  # OUT/llm_ledger.json: ``study_ledger`` of every run of the compare


def study_ledger(run_dirs: dict) -> dict:
    """The study's LLM ledger: per run (``run_dirs``: name -> run directory) and the sum over them."""
    runs = {name: run_spent(path) for name, path in run_dirs.items()}
    total = {name: sum(r[name] for r in runs.values()) for name in LEDGER_FIELDS}
    total["cost_usd"] = round(total["cost_usd"], 6)
    return {"total": total, "runs": runs}


class StudyBudget:
    """The caps of the study over its runs (``run_dirs``: job name -> run directory), with
    ``slots`` runs at most under way at once. Thread-safe: a job's end is heard from another thread."""

    def __init__(self, max_cost_usd: float | None, max_llm_calls: int | None, run_dirs: dict, slots: int):
        self.caps = {"max_cost_usd": max_cost_usd, "max_llm_calls": max_llm_calls}
        self._run_dirs = dict(run_dirs)
        self._slots = max(1, int(slots))
        self._spent = {name: self._read(name) for name in self._run_dirs}
        self._granted: dict[str, dict] = {}  # runs under way: the caps they were given
        self._lock = threading.Lock()

    def _read(self, name: str) -> dict:
        spent = run_spent(self._run_dirs[name])
        return {"max_cost_usd": float(spent["cost_usd"]), "max_llm_calls": int(spent["requests"])}

    def _used(self, key: str) -> float:
        return (sum(s[key] for n, s in self._spent.items() if n not in self._granted)
                + sum(g[key] for g in self._granted.values()))

    def grant(self, name: str) -> dict:
        """The caps of run ``name`` as it starts (``RunConfig`` fields), held for it until ``release``;
        ``JobFailed`` when a cap is reached."""
        with self._lock:
            free = max(1, self._slots - len(self._granted))
            own = self._spent[name]
            given = {}
            for key, cap in self.caps.items():
                if cap is None:
                    continue
                left = cap - self._used(key)
                if key == "max_llm_calls":
                    share = left // free if left >= free else left
                else:
                    share = left / free
                if share <= 0 or (key == "max_llm_calls" and share < 1):
                    raise JobFailed(self._reached(key, cap))
                given[key] = own[key] + (int(share) if key == "max_llm_calls" else share)
            self._granted[name] = {**own, **given}
            return given

    def release(self, name: str, spent: dict | None = None) -> None:
        """Run ``name`` ended: what it spent (a ``run_spent`` record; else read from its directory)
        replaces what it was given."""
        with self._lock:
            self._granted.pop(name, None)
            if spent is not None:
                self._spent[name] = {"max_cost_usd": float(spent["cost_usd"]),
                                     "max_llm_calls": int(spent["requests"])}
            else:
                self._spent[name] = self._read(name)

    def _reached(self, key: str, cap) -> str:
        used = self._used(key)
        what = f"${used:.4f} of ${cap:g}" if key == "max_cost_usd" else f"{int(used)} of {cap} requests"
        flag = "--" + key.replace("_", "-")
        return (f"not started: the study's {flag} is reached ({what} spent by its runs); a higher {flag} "
                f"continues the study")


class CappedPlace:
    """A job place whose training jobs start under ``budget``: each is given its caps as it is
    submitted (``TrainJob.caps``), or fails at once when nothing is left; the rest as ``place``."""

    def __init__(self, place, budget: StudyBudget):
        self._place = place
        self._budget = budget

    def __getattr__(self, name):
        return getattr(self._place, name)

    def submit(self, job) -> cf.Future:
        if getattr(job, "kind", None) != "train":
            return self._place.submit(job)
        try:
            caps = self._budget.grant(job.name)
        except JobFailed as exc:
            future: cf.Future = cf.Future()
            future.set_exception(exc)
            return future
        future = self._place.submit(dataclasses.replace(job, caps=tuple(sorted(caps.items()))))
        future.add_done_callback(lambda f: self._budget.release(job.name, _spent_of(f)))
        return future


def _spent_of(future: cf.Future) -> dict | None:
    """What a finished training job reported it spent (None: it failed; its directory says)."""
    if future.cancelled() or future.exception() is not None:
        return None
    spent = getattr(future.result(), "llm_spent", None)
    return spent if spent and all(isinstance(spent.get(k), (int, float)) and math.isfinite(spent[k])
                                  for k in LEDGER_FIELDS) else None
