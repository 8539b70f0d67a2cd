"""One request to an OpenAI-compatible endpoint and how it ended (``Outcome``): the answer read to
its end or to its deadline, a failure classified (retryable or not), and a notice while it waits."""
from __future__ import annotations

import datetime
import email.utils
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from .usage import LENGTH, OK

__all__ = ["Outcome", "WaitingNotice", "send", "to_messages", "one_line", "MAX_BODY", "notices", "LONG_WAIT"]

log = logging.getLogger("raise_plugin.llm")
# what a person watching a run wants to see as it happens: waiting for the endpoint, long back-offs,
# failed calls (the host's log takes the run's other lines; ``HostProfiler`` shows these on stderr too)
notices = logging.getLogger("raise_plugin.llm.endpoint")
LONG_WAIT = 10.0  # seconds: a wait from which the run says it is waiting

_RETRYABLE_STATUS = {408, 409, 429}
MAX_BODY = 16 * 2 ** 20   # bytes of one answer: far past any program, short of a runaway stream
# half of a character: JSON may escape one (``\ud800``), but no UTF-8 file, journal or prompt can hold it
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def one_line(text: Any, limit: int = 200) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _retry_after(exc: Exception) -> float | None:
    """Seconds asked by the server's ``Retry-After`` (or ``retry-after-ms``) header."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date; anything else (which Python's parser refuses with an error) asks nothing
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # a date without a zone: HTTP dates are in GMT
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, parsed.timestamp() - time.time())


def to_messages(prompt: Any) -> list[dict]:
    """Chat messages for ``prompt``: a string becomes one user message; the host's
    ``{'role', 'message'}`` dicts become ``{'role', 'content'}``; empty system messages go."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt.strip()}]
    messages = []
    for m in prompt:
        content = m.get("content", m.get("message", ""))
        if m.get("role") == "system" and not content:
            continue
        messages.append({"role": m.get("role", "user"), "content": content})
    return messages


@dataclass
class Outcome:
    """How one request ended: ``kind`` is ``OK``/``LENGTH`` (an answer) or a failure kind."""

    kind: str
    text: str = ""
    why: str = ""
    status: int | None = None
    retryable: bool = False
    fatal: Exception | None = None
    retry_after: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class WaitingNotice:
    """Says, while a request is under way, that the run is waiting for the endpoint."""

    def __init__(self, where: str, timeout: float, first: float):
        self.where, self.timeout, self.first = where, timeout, first
        self._done = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._watch, daemon=True) if first > 0 else None
        if self._thread is not None:
            self._thread.start()

    def _watch(self) -> None:
        wait = self.first
        while not self._done.wait(wait):
            notices.warning("waiting for the LLM at %s: %.0f s so far (given up at %.0f s; --llm-timeout)",
                            self.where, time.monotonic() - self._start, self.timeout)
            wait = max(wait, 30.0)

    def close(self) -> None:
        self._done.set()


def send(client, model: str, messages: list[dict], *, timeout: float, connect_timeout: float,
         request_options: dict[str, Any]) -> Outcome:
    """One request through ``client`` (an ``openai.OpenAI``), read to the end of its answer or to
    its deadline (``timeout`` seconds, of which connecting may take ``connect_timeout``)."""
    import openai

    deadline = time.monotonic() + timeout
    limits = openai.Timeout(timeout, connect=connect_timeout)
    try:
        with client.chat.completions.with_streaming_response.create(
                model=model, messages=messages, stream=False, timeout=limits,
                **request_options) as response:
            status = int(getattr(response, "status_code", 200) or 200)
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if time.monotonic() > deadline:
                    return Outcome("timeout", status=status, retryable=True,
                                   why=f"the answer did not end within {timeout:g} s (a model that does "
                                       f"not stop generating? --max-tokens caps it)")
                if size > MAX_BODY:
                    return Outcome("oversized", status=status,
                                   why=f"an answer of more than {MAX_BODY // 2 ** 20} MiB")
    except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
        return Outcome(f"http_{exc.status_code}", status=exc.status_code, fatal=exc,
                       why=_describe_error(exc))
    except openai.APIStatusError as exc:
        return _status_failure(exc)
    except openai.APITimeoutError:
        return Outcome("timeout", retryable=True, why=f"no answer within {timeout:g} s")
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc.__context__
        return Outcome("connection", retryable=True,
                       why=f"connection failed ({one_line(cause or exc, 120)})")
    except Exception as exc:  # the transport failed while the body was read (the openai client's layer)
        return Outcome("cut", status=200, retryable=True,
                       why=f"the answer stopped mid-way ({type(exc).__name__}: {one_line(exc, 120)})")
    return _parse(b"".join(chunks), status)


def _status_failure(exc: openai.APIStatusError) -> Outcome:
    status = int(exc.status_code)
    text = one_line(getattr(exc, "message", exc), 160)
    code = str((getattr(exc, "body", None) or {}).get("code", "") if isinstance(getattr(exc, "body", None), dict)
               else getattr(exc, "code", "") or "")
    if status == 400 and ("context_length" in code or "context length" in text.lower()
                          or "maximum context" in text.lower()):
        return Outcome("context_length", status=status, why=f"the prompt is longer than the model's context "
                                                             f"(HTTP 400: {text})")
    if status == 429:
        return Outcome("rate_limited", status=status, retryable=True, retry_after=_retry_after(exc),
                       why=f"rate-limited (HTTP 429: {text})")
    retryable = status in _RETRYABLE_STATUS or status >= 500
    return Outcome(f"http_{status}", status=status, retryable=retryable, why=f"HTTP {status}: {text}")


def _parse(body: bytes, status: int) -> Outcome:
    """The answer in a 200 body, or why there is none."""
    try:
        data = json.loads(body)
    except ValueError:
        return Outcome("malformed", status=status, why=f"a body that is not JSON ({one_line(body[:80])})")
    if not isinstance(data, dict):
        return Outcome("malformed", status=status, why="a body that is not a chat completion")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = dict(input_tokens=_count(usage.get("prompt_tokens")), output_tokens=_count(usage.get("completion_tokens")))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        why = f"an error in a 200 body ({one_line(error, 120)})" if error else "an answer with no choices"
        return Outcome("no_choices", status=status, why=why, **tokens)
    first = choices[0] if isinstance(choices[0], dict) else {}
    message = first.get("message") if isinstance(first.get("message"), dict) else {}
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        return Outcome("empty", status=status, why="an empty answer", **tokens)
    kind = LENGTH if first.get("finish_reason") == "length" else OK
    return Outcome(kind, text=_LONE_SURROGATE.sub("\ufffd", content), status=status, **tokens)


def _count(value) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _describe_error(exc: Exception) -> str:
    import openai  # loaded on a real endpoint's first use

    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if status is None:
        return f"{type(exc).__name__}: {one_line(exc, 120)}"
    return f"HTTP {status}"
