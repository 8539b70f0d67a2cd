"""Record and replay: every prompt/response pair to a JSONL file, and answers served back from it.

Each line: ``{"hash", "occurrence", "samplers", "operator", "prompt", "response", "usage"}``:
``hash`` is the SHA-256 of the prompt (its text, or the canonical JSON of a message list),
``occurrence`` how many times the same prompt was answered before it in the file, and
``samplers`` how many sampler threads were calling the back-end at that moment.

Replay answers a prompt with the recorded answer of the same hash and occurrence, so the
order in which threads ask does not matter. A run with one sampler asks exactly the
prompts it recorded; a prompt the recording does not hold (or holds fewer times) is a
one-line error naming its hash. A run with several samplers does not: which program is
in the population when a sampler builds its next prompt depends on thread timing, so a
replay asks prompts the recording never saw. Replaying such a recording, a prompt it does
not hold gets a stand-in, the earliest recorded answer no prompt has claimed yet: every
recorded answer is served once, so a replay that asks as many prompts as were recorded
reproduces the recorded programs, with any number of samplers (docs/llm.md says exactly
what is and is not reproduced).

A run directory journals its answered calls in the same format (``CALLS_FILE``), so
``replay:RUN_DIR`` replays a run from its directory alone; a recording is read by ``recording``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from llm4ad.base import LLM

from raise_plugin.durable import AppendLog

from .errors import EndpointFailed, LLMAborted, ReplayMissError
from .operators import infer_operator
from .recording import CALLS_FILE, Recording, journal_owner, read_recording
from .usage import REPLAY, UsageLedger

__all__ = ["prompt_hash", "RecordingLLM", "ReplayLLM", "ReplayExhausted", "records_its_source", "unfit_recording"]

log = logging.getLogger("raise_plugin.llm")


class ReplayExhausted(LLMAborted):
    """Every recorded answer was served and the run still asks: it ends the sampler thread
    that asks (a ``BaseException``, like ``LLMAborted``, so host loops do not retry forever)."""


def prompt_hash(prompt: Any) -> str:
    """SHA-256 hex digest of a prompt (a string, or chat messages as canonical JSON)."""
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RecordingLLM(LLM):
    """Wraps any back-end and appends every prompt/response pair to ``path`` (JSONL)."""

    def __init__(self, inner: LLM, path: str | Path):
        super().__init__(do_auto_trim=inner.do_auto_trim, debug_mode=inner.debug_mode)
        self.inner = inner
        self.path = Path(path)
        self._lock = threading.Lock()
        self._asked = _recorded_counts(self.path)  # a resumed run appends: occurrences go on counting
        self._out = AppendLog(self.path)
        self._callers: dict[int, threading.Thread] = {}

    @property
    def usage(self) -> UsageLedger | None:
        return getattr(self.inner, "usage", None)

    def describe(self) -> str:
        inner = self.inner.describe() if hasattr(self.inner, "describe") else type(self.inner).__name__
        return f"{inner}; recording to {self.path}"

    def close(self) -> None:
        """Close the recording (the back-end it wraps is the caller's to close)."""
        self._out.close()

    def draw_sample(self, prompt: str | Any, *args, **kwargs) -> str:
        samplers = self._samplers()
        response = self.inner.draw_sample(prompt, *args, **kwargs)
        ledger = self.usage
        usage = ledger.last_call() if ledger is not None else None
        digest = prompt_hash(prompt)
        operator = (usage or {}).get("operator") or kwargs.get("operator") or infer_operator(prompt)
        with self._lock:
            entry = {"hash": digest, "occurrence": self._asked[digest], "samplers": samplers,
                     "operator": operator, "prompt": prompt, "response": response, "usage": usage}
            self._out.append(json.dumps(entry, ensure_ascii=False))  # whole, on disk, or WriteFailed
            self._asked[digest] += 1
        return response

    def _samplers(self) -> int:
        """Threads other than the main one that have called and are still alive (at least 1): a
        run's sampler threads; one sampler's initial and evolution threads never overlap."""
        me = threading.current_thread()
        with self._lock:
            self._callers[me.ident] = me
            return max(1, sum(1 for t in self._callers.values()
                              if t.is_alive() and t is not threading.main_thread()))


def _recorded_counts(path: Path) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    counts[json.loads(line)["hash"]] += 1
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line of an interrupted run
    except FileNotFoundError:
        pass
    return counts


def records_its_source(source: Path, record: str | Path | None) -> str | None:
    """Why recording to ``record`` cannot go with replaying ``source`` (the recording it reads: it
    would append every answer to itself, doubling it), else None."""
    if record and Path(record).resolve() == Path(source).resolve():
        return f"{record} is the recording this replay reads: record to another file"
    return None


def unfit_recording(record: str | Path, out: str | Path | None) -> str | None:
    """Why ``record`` cannot be the ``--record`` file of a run writing to ``out``: a file that is not
    a regular one (a device, a pipe: a recording is appended to and read back), or a run directory's
    journal of answers, the run's own or another's (every answer would be written there twice, and
    the journal would no longer replay), else None."""
    path = Path(record)
    if path.exists() and not path.is_file():
        return f"{record}: not a regular file; give the JSONL file to record to"
    if out is not None and path.resolve() == (Path(out) / CALLS_FILE).resolve():
        return (f"{record} is the run's own journal of answers (every run writes its {CALLS_FILE}, in the "
                f"--record format): record to another file")
    owner = journal_owner(path)
    if owner is not None:
        return f"{record} is the journal of answers of the run in {owner}: record to another file"
    return None


class ReplayLLM(LLM):
    """Answers prompts from a recording made by ``RecordingLLM`` (``path``: the file, or a run
    directory, whose journal it reads, or the ``Recording`` read from it); never calls a model.

    ``stand_ins``: answer a prompt the recording does not hold with the earliest unclaimed
    recorded answer (default: when the recording was made by several samplers). Once every
    answer is served, further prompts get empty answers (no sample: the samples under way
    finish the budget) for ``grace`` seconds, then ``ReplayExhausted``. Without stand-ins a
    prompt asked once every answer is served ends the replay cleanly at once
    (``ReplayExhausted``: the recorded run stopped there, before its budget, by a signal or a
    callback); one asked while answers are left is a ``ReplayMissError``."""

    def __init__(self, path: str | Path | Recording, *, stand_ins: bool | None = None, grace: float = 30.0):
        super().__init__()
        recording = path if isinstance(path, Recording) else read_recording(path)
        self.run_dir, self.path = recording.run_dir, recording.path
        self._entries = recording.answers
        self._answers: dict[str, deque] = defaultdict(deque)  # hash -> indices, in occurrence order
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        for index, entry in enumerate(self._entries):
            self._answers[entry["hash"]].append(index)
        self.size = len(self._entries)
        self.samplers = recording.samplers
        self.stand_ins = self.samplers > 1 if stand_ins is None else bool(stand_ins)
        self.grace = float(grace)
        self.claimed = [False] * self.size
        self.substituted = 0   # prompts answered by a stand-in
        self.unanswered = 0    # prompts asked after every answer was served
        self._next_free = 0
        self._ran_out_at: float | None = None
        self.failed_there: str | None = None  # the failure the recorded run ended on (``replay.ends_as_recorded``)
        self.usage = UsageLedger(backend=REPLAY, model=str(self.path), priced=True)

    def describe(self) -> str:
        made = f"by {self.samplers} samplers; prompts it lacks get stand-ins" if self.stand_ins else "by one sampler"
        source = f"the run {self.run_dir}" if self.run_dir is not None else str(self.path)
        return f"replay of {source} ({self.size} recorded answers, {made}; no LLM is called)"

    def draw_sample(self, prompt: str | Any, *args, **kwargs) -> str:
        digest = prompt_hash(prompt)
        self.usage.check()  # the recorded run's caps and failure bound stop the replay where they stopped it
        with self._lock:
            index = self._own_answer(digest)
            if index is None and self.stand_ins:
                index = self._stand_in()
                if index is not None:
                    self.substituted += 1
                    if self.substituted == 1:
                        log.warning("replay %s: a prompt the recording lacks got the earliest unclaimed answer "
                                    "(several samplers recorded it; see docs/llm.md)", self.path)
            if index is None:
                if self.size and not self.stand_ins and self._stand_in() is None:  # every answer is claimed
                    raise self._ended()  # the recorded run asked no more: it stopped here, before its budget
                if not self.stand_ins or self.size == 0:
                    raise self._miss(digest, prompt, kwargs)
                return self._ran_out()
            self.claimed[index] = True
            self._served[digest] += 1
        entry = self._entries[index]
        usage = entry.get("usage") or {}
        self.usage.record(entry.get("operator") or usage.get("operator") or "other",
                          input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
                          cost_usd=usage.get("cost_usd", 0.0), failed=bool(usage.get("failed", False)),
                          retries=usage.get("retries", 0))
        return entry["response"]

    def prime(self, prompt: str | Any, response: str) -> None:
        """Mark the recorded answer a resumed run was given before as served."""
        digest = prompt_hash(prompt)
        with self._lock:
            index = self._own_answer(digest)
            if index is not None:
                self.claimed[index] = True
                self._served[digest] += 1

    # -- internals (lock held) ---------------------------------------------------------------
    def _own_answer(self, digest: str) -> int | None:
        """The next unclaimed recorded answer to this very prompt."""
        queue = self._answers.get(digest)
        while queue:
            index = queue.popleft()
            if not self.claimed[index]:
                return index
        return None

    def _stand_in(self) -> int | None:
        while self._next_free < self.size and self.claimed[self._next_free]:
            self._next_free += 1
        return self._next_free if self._next_free < self.size else None

    def _miss(self, digest: str, prompt, kwargs) -> ReplayMissError:
        asked = self._served[digest] + 1
        where = f"asked {asked} times but recorded {asked - 1}" if asked > 1 else "not in the recording"
        owner = journal_owner(self.path)  # a run's journal, replayed with the settings given here
        how = (f"--llm replay:{owner} takes them from its run directory" if owner is not None else
               "--llm replay: with the recorded run's directory takes them from it")
        why = "" if self.run_dir is not None else f" (were the recorded run's settings given again? {how})"
        return ReplayMissError(f"replay {self.path}: prompt {digest[:16]} "
                               f"({kwargs.get('operator') or infer_operator(prompt)}) is {where}: this run asks "
                               f"prompts the recorded one did not{why}")

    def _ended(self) -> LLMAborted:
        if self.failed_there:  # its failed requests are in no journal of answers: the replay fails where it did
            return EndpointFailed(f"replay {self.path}: all {self.size} recorded answers are replayed; the recorded "
                                  f"run failed there ({self.failed_there}), so the replay ends as it did")
        return ReplayExhausted(f"replay {self.path}: all {self.size} recorded answers are replayed; the recorded "
                               f"run asked no more (it stopped there), so the replay stops with it")

    def _ran_out(self) -> str:
        """Every answer is served: an empty answer (no sample) while the samples under way may
        still end the run, then ``ReplayExhausted``."""
        now = time.monotonic()
        if self._ran_out_at is None:
            self._ran_out_at = now
            log.warning("replay %s: all %d recorded answers are served; further prompts get no answer",
                        self.path, self.size)
        self.unanswered += 1
        if now - self._ran_out_at >= self.grace:
            raise ReplayExhausted(f"replay {self.path}: all {self.size} recorded answers are served and the run "
                                  f"still asks; give it a budget of at most the recorded answers")
        time.sleep(0.05)  # under the lock: the samplers that ran out wait in turn instead of spinning
        return ""
