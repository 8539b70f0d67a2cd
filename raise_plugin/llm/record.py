"""Record and replay: every prompt/response pair to a JSONL file, and answers served back from it.

Each line: ``{"hash", "operator", "prompt", "response", "usage"}``, ``hash`` being the
SHA-256 of the prompt (its text, or the canonical JSON of a message list). Replay
answers a prompt from the recorded answers with the same hash, in recorded order
when a prompt was asked several times, and fails with a one-line error naming the
hash when the recording has no (more) answers for it.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

from llm4ad.base import LLM

from raise_plugin.errors import UserError

from .errors import ReplayMissError
from .operators import infer_operator
from .usage import UsageLedger

__all__ = ["prompt_hash", "RecordingLLM", "ReplayLLM"]


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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    @property
    def usage(self) -> UsageLedger | None:
        return getattr(self.inner, "usage", None)

    def describe(self) -> str:
        inner = self.inner.describe() if hasattr(self.inner, "describe") else type(self.inner).__name__
        return f"{inner}; recording to {self.path}"

    def draw_sample(self, prompt: str | Any, *args, **kwargs) -> str:
        response = self.inner.draw_sample(prompt, *args, **kwargs)
        ledger = self.usage
        usage = ledger.last_call() if ledger is not None else None
        entry = {
            "hash": prompt_hash(prompt),
            "operator": (usage or {}).get("operator") or kwargs.get("operator") or infer_operator(prompt),
            "prompt": prompt,
            "response": response,
            "usage": usage,
        }
        line = json.dumps(entry, ensure_ascii=False)
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
        return response


class ReplayLLM(LLM):
    """Answers prompts from a recording made by ``RecordingLLM``; never calls a model."""

    def __init__(self, path: str | Path):
        super().__init__()
        self.path = Path(path)
        self._answers: dict[str, deque] = defaultdict(deque)
        self._served: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UserError(f"cannot read LLM recording {self.path}: {exc.strerror or exc}") from None
        self.size = 0
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self._answers[entry["hash"]].append(entry)
            except (ValueError, KeyError, TypeError):
                raise UserError(f"LLM recording {self.path} line {number} is not a recorded answer") from None
            self.size += 1
        self.usage = UsageLedger(backend="replay", model=str(self.path), priced=True)

    def describe(self) -> str:
        return f"replay of {self.path} ({self.size} recorded answers; no LLM is called)"

    def draw_sample(self, prompt: str | Any, *args, **kwargs) -> str:
        digest = prompt_hash(prompt)
        with self._lock:
            queue = self._answers.get(digest)
            if not queue:
                asked = self._served[digest] + 1
                where = (f"asked {asked} times but recorded {asked - 1}" if asked > 1
                         else "not in the recording")
                raise ReplayMissError(f"replay {self.path}: prompt {digest[:16]} "
                                      f"({kwargs.get('operator') or infer_operator(prompt)}) is {where}")
            entry = queue.popleft()
            self._served[digest] += 1
        usage = entry.get("usage") or {}
        self.usage.record(entry.get("operator") or usage.get("operator") or "other",
                          input_tokens=usage.get("input_tokens", 0), output_tokens=usage.get("output_tokens", 0),
                          cost_usd=usage.get("cost_usd", 0.0), failed=bool(usage.get("failed", False)),
                          retries=usage.get("retries", 0))
        return entry["response"]
