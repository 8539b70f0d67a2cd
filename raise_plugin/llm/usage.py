"""The usage ledger: every LLM request counted, capped and journalled (thread-safe).

A back-end asks the ledger before each request it sends (``begin_request``) and tells it
how the request ended (``end_request``). The ledger refuses a request past a cap (requests,
retries included, or dollars: ``LLMCapReached``) or after ``max_failed_requests`` requests
in a row that gave no usable program (``EndpointFailed``); both end a run, never loop.

With a journal (``open_journal(path)``) every event is appended to a JSONL file as it
happens, the request's line *before* it is sent, so after a kill -9 the journal still
counts every request the endpoint may have received (one cut short shows as
``interrupted``). ``UsageLedger.load_journal`` rebuilds the counts from it on resume.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from ..durable import AppendLog, journal_lines
from .errors import EndpointFailed, LLMCapReached

__all__ = ["OperatorUsage", "UsageLedger", "OK", "LENGTH", "REPLAY", "REQUESTS_FILE"]

REQUESTS_FILE = "llm_requests.jsonl"  # a run directory's request journal (``UsageLedger.load_journal``)
REPLAY = "replay"   # the back-end name of a ledger that counts answers replayed from a recording
OK = "ok"
LENGTH = "length"   # an answer cut off at the completion-token cap: paid for, returned, often unusable


@dataclass
class OperatorUsage:
    """``calls``: LLM calls (each a first request); ``retries``: the further requests of a call;
    ``failures``: calls that gave no answer; ``unusable``: answers that gave no program."""

    calls: int = 0
    failures: int = 0
    retries: int = 0
    unusable: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0

    def add(self, other: "OperatorUsage") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class UsageLedger:
    """Counts per operator and failures by kind; one ledger per back-end, shared by its threads.

    ``calls + retries`` is the number of requests sent. ``cost_usd`` uses the back-end's price
    table; ``priced`` is False when the model has none (the cost then stays 0 and the summary
    says so). Caps: ``max_requests`` (retries included), ``max_cost_usd``; the failure bound
    ``max_failed_requests`` counts requests that failed and answers without a usable program
    since the last usable one (or, with ``reset_on_answer``, the last answer: a back-end used
    outside a run, where nothing says which answers became programs). ``endpoint`` names the
    endpoint in messages.
    """

    backend: str = ""
    model: str = ""
    priced: bool = True
    endpoint: str = ""
    max_requests: int | None = None
    max_cost_usd: float | None = None
    max_failed_requests: int | None = None
    reset_on_answer: bool = True   # off when a run's guard says which answers became programs
    _per_operator: dict[str, OperatorUsage] = field(default_factory=dict, repr=False)
    _kinds: dict[str, int] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _last: threading.local = field(default_factory=threading.local, repr=False, compare=False)
    _open: dict = field(default_factory=dict, repr=False)       # request id -> operator, not yet ended
    _next_id: int = 0
    _streak: int = 0
    _last_failure: str = ""
    _interrupted: int = 0
    _classified: set = field(default_factory=set, repr=False)   # calls already counted as unusable
    _journal: AppendLog | None = field(default=None, repr=False)
    _stop_reason: str = ""
    _journal_endpoint: str | None = None   # the endpoint the journal's latest requests went to

    # -- the journal -----------------------------------------------------------------------------
    def open_journal(self, path: str | os.PathLike) -> None:
        """Append every later event to ``path`` (after replaying what it already holds)."""
        path = Path(path)
        if path.exists():
            self.load_journal(path)
        self._journal = AppendLog(path, sync=False)
        if self.endpoint and self.endpoint != self._journal_endpoint:  # the requests from here on go there
            with self._lock:
                self._write({"e": "endpoint", "at": self.endpoint})
                self._moved_to(self.endpoint)

    def close_journal(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def _write(self, event: dict) -> None:
        """One line, whole or not at all (lock held); a disk that refuses it raises ``WriteFailed``."""
        if self._journal is not None:
            self._journal.append(json.dumps(event, separators=(",", ":")))

    def load_journal(self, path: str | os.PathLike) -> None:
        """Add the counts of a journal (a resumed run's earlier requests); a torn or damaged line is
        skipped (``durable.journal_lines``; a resume has said so: ``robust.llm_guard.check_journals``)."""
        try:
            lines = journal_lines(path)
        except OSError:
            return
        opened: dict = {}
        with self._lock:
            for line in lines:
                e = line.record
                try:
                    kind = e["e"]
                except (KeyError, TypeError):
                    continue
                op = e.get("op", "other")
                if kind == "sent":
                    opened[e.get("id")] = op
                    self._next_id = max(self._next_id, int(e.get("id", -1)) + 1)
                    self._count_sent(op, int(e.get("attempt", 0)))
                elif kind == "done":
                    opened.pop(e.get("id"), None)
                    self._count_done(op, e.get("kind", OK), int(e.get("in", 0)), int(e.get("out", 0)),
                                     float(e.get("cost", 0.0)), float(e.get("s", 0.0)), e.get("why", ""))
                elif kind == "failed":
                    self._entry(op).failures += 1
                elif kind == "unusable":
                    self._count_unusable(op)
                    if e.get("call") is not None:
                        self._classified.add(e["call"])
                elif kind == "usable":
                    self._streak = 0
                elif kind == "endpoint":
                    self._moved_to(e.get("at"))
            # requests sent that never ended: the process was killed while they were under way
            if opened:
                self._interrupted += len(opened)
                self._kinds["interrupted"] = self._kinds.get("interrupted", 0) + len(opened)

    # -- requests --------------------------------------------------------------------------------
    def begin_request(self, operator: str, attempt: int = 0) -> int:
        """Count a request about to be sent (journalled first); its id for ``end_request``.

        Raises ``LLMCapReached`` when a cap leaves no room for it and ``EndpointFailed`` when
        ``max_failed_requests`` requests in a row gave no usable program."""
        with self._lock:
            self._check_locked()
            rid = self._next_id
            self._next_id += 1
            self._open[rid] = operator
            self._count_sent(operator, attempt)
            self._write({"e": "sent", "id": rid, "op": operator, "attempt": int(attempt)})
            return rid

    def end_request(self, rid: int, kind: str = OK, *, input_tokens: int = 0, output_tokens: int = 0,
                    cost_usd: float = 0.0, seconds: float = 0.0, why: str = "") -> None:
        """How request ``rid`` ended: ``OK``/``LENGTH`` (an answer) or a failure kind."""
        with self._lock:
            op = self._open.pop(rid, "other")
            self._count_done(op, kind, input_tokens, output_tokens, cost_usd, seconds, why)
            self._write({"e": "done", "id": rid, "op": op, "kind": kind, "in": int(input_tokens or 0),
                         "out": int(output_tokens or 0), "cost": float(cost_usd or 0.0), "s": round(seconds, 4),
                         **({"why": why} if why else {})})

    def call_failed(self, operator: str) -> None:
        """A call ended without an answer (its last request failed)."""
        with self._lock:
            self._entry(operator).failures += 1
            self._write({"e": "failed", "op": operator})

    def unusable(self, operator: str, call: int | None = None) -> None:
        """An answer gave no program (no code, code that does not parse, an empty answer);
        ``call``: its number in the run, so a resumed run that is given it again from its
        journal does not count it twice."""
        with self._lock:
            if call is not None:
                if call in self._classified:
                    return
                self._classified.add(call)
            self._count_unusable(operator)
            self._write({"e": "unusable", "op": operator, **({"call": call} if call is not None else {})})

    def usable(self) -> None:
        """An answer became a sample: the failure streak starts again."""
        with self._lock:
            if self._streak:
                self._streak = 0
                self._write({"e": "usable"})

    def stop(self, reason: str | None) -> None:
        """No request from now on: ``begin_request`` and ``check`` raise ``LLMCapReached(reason)`` and a
        back-off under way (``pause``) ends within 0.1 s (the run is stopping: a signal, a cap, a callback);
        ``None`` lifts it (the run has ended). It takes no lock: a signal handler calls it."""
        self._stop_reason = reason or ""

    def pause(self, seconds: float) -> None:
        """The back-off before a retry: ``seconds``, or until the ledger is stopped."""
        end = time.monotonic() + seconds
        while not self._stop_reason and time.monotonic() < end:
            time.sleep(min(0.1, max(0.0, end - time.monotonic())))

    def check(self) -> None:
        """Raise what ``begin_request`` would raise now (before an answer served without a request)."""
        with self._lock:
            self._check_locked()

    def record(self, operator: str, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0,
               failed: bool = False, retries: int = 0, seconds: float = 0.0) -> None:
        """Count one finished call made of ``1 + retries`` requests (back-ends without HTTP)."""
        for attempt in range(1 + int(retries)):
            rid = self.begin_request(operator, attempt)
            last = attempt == int(retries)
            kind = ("failed" if failed else OK) if last else "retried"
            self.end_request(rid, kind, input_tokens=input_tokens if last else 0,
                             output_tokens=output_tokens if last else 0, cost_usd=cost_usd if last else 0.0,
                             seconds=seconds if last else 0.0)
        if failed:
            self.call_failed(operator)
        self.set_last_call(operator, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost_usd,
                           failed=failed, retries=retries)

    def set_last_call(self, operator: str, *, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0,
                      failed: bool = False, retries: int = 0, kind: str = OK) -> None:
        self._last.call = {"operator": operator, "input_tokens": int(input_tokens or 0),
                           "output_tokens": int(output_tokens or 0), "cost_usd": float(cost_usd or 0.0),
                           "failed": bool(failed), "retries": int(retries), "kind": kind}

    def last_call(self) -> dict | None:
        """The counts of the latest call finished by the calling thread."""
        return getattr(self._last, "call", None)

    # -- internals (lock held) -------------------------------------------------------------------
    def _entry(self, operator: str) -> OperatorUsage:
        return self._per_operator.setdefault(operator, OperatorUsage())

    def _count_sent(self, operator: str, attempt: int) -> None:
        entry = self._entry(operator)
        if attempt == 0:
            entry.calls += 1
        else:
            entry.retries += 1

    def _count_done(self, op, kind, input_tokens, output_tokens, cost_usd, seconds, why) -> None:
        entry = self._entry(op)
        entry.input_tokens += int(input_tokens or 0)
        entry.output_tokens += int(output_tokens or 0)
        entry.cost_usd += float(cost_usd or 0.0)
        entry.seconds += float(seconds or 0.0)
        if kind != OK:
            self._kinds[kind] = self._kinds.get(kind, 0) + 1
        if kind not in (OK, LENGTH):
            self._streak += 1
            self._last_failure = why or kind
        elif self.reset_on_answer:
            self._streak = 0

    def _moved_to(self, endpoint) -> None:
        """Requests go to ``endpoint`` from here on: the failures in a row of another endpoint stop counting."""
        if self._journal_endpoint is not None and endpoint != self._journal_endpoint:
            self._streak = 0
        self._journal_endpoint = endpoint

    def _count_unusable(self, op) -> None:
        self._entry(op).unusable += 1
        self._kinds["unusable"] = self._kinds.get("unusable", 0) + 1
        self._streak += 1
        self._last_failure = "an answer without a usable program"

    @property
    def replayed(self) -> bool:
        """Whether the ledger counts answers replayed from a recording (nothing is sent, nothing spent)."""
        return self.backend == REPLAY

    def _check_locked(self) -> None:
        if self._stop_reason:
            raise LLMCapReached(self._stop_reason)
        total = OperatorUsage()
        for usage in self._per_operator.values():
            total.add(usage)
        requests = total.calls + total.retries
        # a cap reached while the requests fail (a dead endpoint after a resume) must not read as a clean stop
        failing = (f"; the last {self._streak} in a row gave no usable program, the last: {self._last_failure}"
                   if self._streak and not self.replayed else "")
        if self.max_requests is not None and requests >= self.max_requests:
            done = (f"{total.calls} answers replayed" + (f" with their {total.retries} recorded retries"
                                                         if total.retries else "") + ", no request sent"
                    if self.replayed else f"{requests} sent, retries included{failing}")
            raise LLMCapReached(f"the cap of {self.max_requests} LLM requests is reached ({done}); continue with "
                                f"`raise-ahd resume RUN_DIR --max-llm-calls HIGHER`")
        # a relative tolerance: ten calls of $0.01 add up to 0.09999999999999999
        if self.max_cost_usd is not None and total.cost_usd >= self.max_cost_usd * (1 - 1e-9):
            spent = (f"${total.cost_usd:.4f} recorded in {total.calls} answers replayed, nothing spent"
                     if self.replayed else f"${total.cost_usd:.4f} spent{failing}")
            raise LLMCapReached(f"the LLM cost cap of ${self.max_cost_usd:g} is reached ({spent}); continue with "
                                f"`raise-ahd resume RUN_DIR --max-cost-usd HIGHER`")
        if self.max_failed_requests is not None and self._streak >= self.max_failed_requests:
            where = f" from {self.endpoint}" if self.endpoint else ""
            what = "recorded answers replayed" if self.replayed else "LLM requests"
            raise EndpointFailed(f"{self._streak} {what} in a row gave no usable program{where}; the last: "
                                 f"{self._last_failure} (--max-failed-requests raises the bound)")

    # -- reading ---------------------------------------------------------------------------------
    @property
    def streak(self) -> int:
        with self._lock:
            return self._streak

    @property
    def requests(self) -> int:
        t = self.total()
        return t.calls + t.retries

    def failures_by_kind(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._kinds.items()))

    def per_operator(self) -> dict[str, OperatorUsage]:
        """A snapshot copy, operator name -> counts."""
        with self._lock:
            return {name: OperatorUsage(**asdict(u)) for name, u in sorted(self._per_operator.items())}

    def total(self) -> OperatorUsage:
        total = OperatorUsage()
        for usage in self.per_operator().values():
            total.add(usage)
        return total

    def to_dict(self) -> dict:
        """JSON-ready summary for a run directory's ``summary.json`` and ``llm_usage.json``."""
        per_op = self.per_operator()
        total = OperatorUsage()
        for usage in per_op.values():
            total.add(usage)
        totals = _rounded(asdict(total))
        totals["requests"] = total.calls + total.retries
        return {
            "backend": self.backend,
            "model": self.model,
            "priced": self.priced,
            "total": totals,
            "failures_by_kind": self.failures_by_kind(),
            "per_operator": {name: _rounded(asdict(u)) for name, u in per_op.items()},
        }

    def summary(self) -> str:
        """One line: requests, failures, retries, tokens and cost."""
        t = self.total()
        cost = f"${t.cost_usd:.4f}" if self.priced else "cost unknown (no price for this model)"
        who = " ".join(x for x in (self.backend, self.model) if x)
        if self.replayed:
            return (f"LLM usage ({who}): {t.calls} answers replayed, no request sent; as recorded: {t.failures} "
                    f"failed, {t.retries} retries, {t.unusable} unusable, {t.input_tokens} input + "
                    f"{t.output_tokens} output tokens, {cost} (not spent again)")
        return (f"LLM usage{' (' + who + ')' if who else ''}: {t.calls} calls, {t.failures} failed, "
                f"{t.retries} retries, {t.unusable} unusable, {t.input_tokens} input + {t.output_tokens} "
                f"output tokens, {cost}")

    def merge(self, data: Mapping) -> None:
        """Add the per-operator counts of a ``to_dict()`` (a resumed run without a journal)."""
        with self._lock:
            for name, counts in dict(data.get("per_operator", {})).items():
                known = {k: v for k, v in dict(counts).items() if k in OperatorUsage.__dataclass_fields__}
                self._entry(name).add(OperatorUsage(**known))
            for kind, n in dict(data.get("failures_by_kind", {})).items():
                self._kinds[kind] = self._kinds.get(kind, 0) + int(n)


def _rounded(d: dict) -> dict:
    d = dict(d)
    d["cost_usd"] = round(d["cost_usd"], 8)
    d["seconds"] = round(d["seconds"], 3)
    return d
