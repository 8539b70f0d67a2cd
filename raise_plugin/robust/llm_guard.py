"""The run's side of its LLM: failures end the run, answers are journalled, a resume is exact.

``LLMGuard`` sits between a host method and its LLM back-end (the wrapper puts it there).

- A cap reached (``LLMCapReached``), or a replay whose every answer was served, stops the
  run cleanly; an endpoint that cannot serve
  (``EndpointFailed``, a refused key, a replay that misses a prompt), or a disk that refuses
  the journals (``WriteFailed``), ends it with a one-line failure. The host's loops swallow ``Exception`` and would ask again forever, so the guard
  tells the run to stop first and then raises ``LLMUnavailable``, which the loops pass to
  their stop check.
- An answer that gave no sample (prose, code that does not parse, an empty answer) is
  counted as unusable when the same thread asks again (the answers of a batch, FunSearch's
  four, together: as many as gave no sample); it counts against the ledger's
  failure bound like a failed request. A sample resets that bound. A back-end without a
  ledger (one a script passes in), and a call that raises (the host's loops would ask again
  at once, for ever), are held to the same bound by the guard itself.
- Every answered call is appended to the run directory's ``llm_calls.jsonl`` (the
  ``--record`` format: ``raise-ahd run --llm replay:RUN_DIR`` replays any run).
  A resumed run primes the back-end with the calls made before its restore point and serves
  the calls made after it (answered, but not yet a sample when the run was killed) from the
  journal instead of asking again: nothing paid for is asked twice, and the sequence of
  answers is the uninterrupted run's.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from pathlib import Path
from typing import Any

from llm4ad.base import LLM

from ..durable import WriteFailed, journal_lines
from ..llm.errors import LLMAborted, LLMCapReached, LLMConfigError, ReplayMissError
from ..llm.operators import infer_operator, operator_kind
from ..llm.record import RecordingLLM, ReplayExhausted, prompt_hash
from ..llm.recording import CALLS_FILE
from ..llm.usage import REQUESTS_FILE
from ..rundir.repair import checked_lines
from ..settings import default

__all__ = ["LLMGuard", "LLMUnavailable", "CALLS_FILE", "REQUESTS_FILE", "is_answer", "check_journals"]

log = logging.getLogger("raise_plugin.llm")


class LLMUnavailable(RuntimeError):
    """The LLM cannot answer any more in this run (the run was told to stop first)."""


def innermost(llm):
    """The back-end under any recording wrappers."""
    while hasattr(llm, "inner"):
        llm = llm.inner
    return llm


class LLMGuard(LLM):
    """Wraps the run's LLM back-end; ``bind(method)`` before the run starts."""

    def __init__(self, inner: LLM, run_dir: str | Path | None = None):
        super().__init__(do_auto_trim=getattr(inner, "do_auto_trim", True),
                         debug_mode=getattr(inner, "debug_mode", False))
        self.backend = inner
        self.run_dir = Path(run_dir) if run_dir is not None else None
        usage = getattr(inner, "usage", None)
        if usage is not None and hasattr(usage, "reset_on_answer"):
            usage.reset_on_answer = False  # only a sample says an answer was usable (journal read below)
        if self.run_dir is not None:
            inner = RecordingLLM(inner, self.run_dir / CALLS_FILE)
            usage = getattr(self.backend, "usage", None)
            if usage is not None and hasattr(usage, "open_journal"):
                usage.open_journal(self.run_dir / REQUESTS_FILE)
        self.inner = inner
        self._journal = inner if self.run_dir is not None else None  # the run directory's journal of answers
        self.calls = 0          # answered calls of the whole run (a resumed run's earlier ones included)
        self._method = None
        self._lock = threading.Lock()
        self._tail: deque[dict] = deque()
        self._local = threading.local()
        self._failures = 0      # calls in a row that raised or, without a ledger, gave no sample
        self._last_failure = ""

    def close(self) -> None:
        """Close the run directory's journals (answers and requests) this guard opened; the back-end
        stays the caller's."""
        if self._journal is not None:
            self._journal.close()
        usage = getattr(self.backend, "usage", None)
        if hasattr(usage, "close_journal"):
            usage.close_journal()
        self.stop_requests(None)  # the run has ended: the back-end may serve another

    def stop_requests(self, reason: str | None) -> None:
        """The run is stopping (``None``: it has ended): the back-end's ledger refuses any further request,
        a retry or back-off under way included (``UsageLedger.stop``); a request in flight ends as it ends."""
        usage = getattr(self.backend, "usage", None)
        if hasattr(usage, "stop"):
            usage.stop(reason)

    def bind(self, method) -> None:
        self._method = method

    @property
    def usage(self):
        return getattr(self.backend, "usage", None)

    def describe(self) -> str:
        describe = getattr(self.backend, "describe", None)
        return describe() if callable(describe) else type(self.backend).__name__

    def __getattr__(self, name: str) -> Any:  # the back-end's own attributes (model, seed, ...)
        if name.startswith("__") or name in ("backend", "inner"):
            raise AttributeError(name)
        return getattr(self.backend, name)

    # -- the host's interface ----------------------------------------------------------------
    def draw_samples(self, prompts, *args, **kwargs) -> list[str]:
        """Answers to several prompts drawn as one batch (FunSearch's samples of one prompt): a host that draws
        them together registers their samples after drawing them all, so they are settled together."""
        self._settle_previous()
        self._local.batch = True
        try:
            return [self.draw_sample(prompt, *args, **kwargs) for prompt in prompts]
        finally:
            self._local.batch = False

    def draw_sample(self, prompt: str | Any, *args, **kwargs) -> str:
        if not getattr(self._local, "batch", False):
            self._settle_previous()
        self._check_failures()
        served = self._from_tail(prompt)
        if served is not None:
            self._answered(prompt, served, kwargs)
            return served
        try:
            response = self.inner.draw_sample(prompt, *args, **kwargs)
        except (LLMCapReached, ReplayExhausted) as exc:  # a cap, or every recorded answer served
            self._stop(str(exc), failed=False)
        except (LLMAborted, LLMConfigError, ReplayMissError, WriteFailed) as exc:  # WriteFailed: a full disk
            self._stop(str(exc), failed=True)
        except Exception as exc:  # the back-end's fault, or a journal's: counted, then the host's loop sees it
            self._failed_call(f"{type(exc).__name__}: {exc}")
            raise
        self._answered(prompt, response, kwargs)
        return response

    def sample_registered(self) -> None:
        """One of the calling thread's latest answers became a sample."""
        self._local.registered = getattr(self._local, "registered", 0) + 1
        with self._lock:
            self._failures = 0
        usage = self.usage
        if usage is not None and hasattr(usage, "usable"):
            usage.usable()

    # -- resume ------------------------------------------------------------------------------
    def resume(self, calls_before: int | None) -> None:
        """Continue a run whose journal holds its answered calls: the first ``calls_before``
        prime the back-end (they led to the samples restored), the rest are served again
        (``None``: every call primes it, none is served)."""
        if self.run_dir is None:
            return
        entries = _read_calls(self.run_dir / CALLS_FILE)
        calls_before = len(entries) if calls_before is None else min(int(calls_before), len(entries))
        prime = getattr(innermost(self.inner), "prime", None)
        if callable(prime):
            for entry in entries[:calls_before]:
                prime(entry["prompt"], entry["response"])
        with self._lock:
            self.calls = calls_before
            self._tail = deque(entries[calls_before:])

    # -- internals ---------------------------------------------------------------------------
    def _from_tail(self, prompt) -> str | None:
        with self._lock:
            if not self._tail:
                return None
            entry = self._tail[0]
            if entry["hash"] != prompt_hash(prompt):
                log.warning("the resumed run asks another prompt than the interrupted run did at call %d; "
                            "%d answered calls after it are asked again", self.calls + 1, len(self._tail))
                self._tail.clear()
                return None
            self._tail.popleft()
        prime = getattr(innermost(self.inner), "prime", None)
        if callable(prime):
            prime(entry["prompt"], entry["response"])
        return entry["response"]

    def _answered(self, prompt, response: str, kwargs) -> None:
        with self._lock:
            self.calls += 1
            call = self.calls
        op = kwargs.get("operator") or infer_operator(prompt)
        # an answer meant to become a program; text operators (reflections) never do. A ledger counts an empty
        # answer as a failed request itself; without one, the guard counts it here
        if (response or not self._ledgered()) and operator_kind(op) != "text":
            self._local.pending = getattr(self._local, "pending", []) + [(op, call)]

    def _settle_previous(self) -> None:
        """Count this thread's previous answers (one, or a batch) as unusable when no sample came of them."""
        pending, registered = getattr(self._local, "pending", []), getattr(self._local, "registered", 0)
        self._local.pending, self._local.registered = [], 0
        for entry in pending[registered:]:
            if self._ledgered():
                self.usage.unusable(*entry)
            else:
                self._failed_call("an answer without a usable program")

    def _ledgered(self) -> bool:
        """Whether the back-end's ledger counts unusable answers against its failure bound."""
        return hasattr(self.usage, "unusable")

    def _failed_call(self, what: str) -> None:
        with self._lock:
            self._failures += 1
            self._last_failure = what

    def _check_failures(self) -> None:
        """Stop the run as failed once ``max_failed_requests`` calls in a row raised or, from a back-end without a
        ledger, gave no sample (the ledger's bound, else the setting's default)."""
        bound = getattr(self.usage, "max_failed_requests", None) or default("max_failed_requests")
        with self._lock:
            failures, last = self._failures, self._last_failure
        if failures >= bound:
            self._stop(f"{failures} calls in a row to the LLM back-end ({self.describe()}) gave no usable program; "
                       f"the last: {last}", failed=True)

    def _stop(self, reason: str, *, failed: bool):
        method = self._method
        if method is not None:
            if failed:
                method.fail(reason)
            else:
                method.request_stop(reason)
        raise LLMUnavailable(reason) from None


def is_answer(record: dict) -> bool:
    """Whether a line of ``llm_calls.jsonl`` is an answered call a resume can serve or prime."""
    return isinstance(record, dict) and all(key in record for key in ("hash", "response", "prompt"))


def _read_calls(path: Path) -> list[dict]:
    """The answered calls ``path`` journals (a torn or damaged line passed over: ``check_journals``
    has repaired the file and said so before a resume reads it)."""
    try:
        lines = journal_lines(path)
    except OSError:
        return []
    return [line.record for line in lines if is_answer(line.record)]


def check_journals(run_dir: Path, sampled: bool, repaired) -> None:
    """The journals of a run directory about to be resumed, checked before the LLM guard reads and
    appends to them, each loss said in one line (``repaired``) with what it means: a damaged line
    is dropped, the original kept as ``<name>.damaged`` (``rundir.repair.checked_lines``). A journal
    of answers lost or damaged leaves the run unable to be replayed from its directory, and the
    answers it lost that were not yet samples are asked again (paid again, from a paid endpoint);
    ``sampled``: the run has taken samples, so a missing journal of answers lost some. A request
    journal that lost lines counts fewer requests than were sent, and the caps count it."""
    calls, requests = run_dir / CALLS_FILE, run_dir / REQUESTS_FILE
    unreplayable = "the run can no longer be replayed from its directory"
    if calls.exists():
        checked_lines(calls, is_answer, repaired, f"an answer they held is lost: {unreplayable}, and one not yet a "
                                                  "sample is asked again")
    elif sampled or (requests.exists() and requests.stat().st_size):
        repaired(f"{CALLS_FILE} (the journal of LLM answers) is missing: {unreplayable}, and any answer not yet "
                 "a sample is asked again")
    checked_lines(requests, lambda r: isinstance(r.get("e"), str), repaired,
                  "the requests counted (which --max-llm-calls and --max-cost-usd count) may be low by as many")
