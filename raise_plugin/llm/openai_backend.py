"""An OpenAI-compatible chat back-end (OpenAI, vLLM, Ollama, ...) with retries and cost accounting.

Configuration, first found wins: constructor arguments, then the environment:
``OPENAI_BASE_URL`` (default: the OpenAI API), ``OPENAI_API_KEY`` and the model in
``RAISE_LLM_MODEL`` or ``OPENAI_MODEL``. The ``openai`` client's own retries are off;
this class retries rate limits (429), timeouts, connection errors and server errors
(5xx) itself with exponential back-off and jitter, honouring ``Retry-After``, so
retries are counted in the usage ledger.
"""
from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
from typing import Any, Callable, Mapping

import openai
from llm4ad.base import LLM

from .errors import LLMAborted, LLMConfigError
from .operators import infer_operator
from .usage import DEFAULT_PRICES, Price, UsageLedger

__all__ = ["OpenAIBackend", "ENV_BASE_URL", "ENV_API_KEY", "ENV_MODEL", "price_for"]

log = logging.getLogger("raise_plugin.llm")

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = ("RAISE_LLM_MODEL", "OPENAI_MODEL")

_RETRYABLE_STATUS = {408, 409, 429}


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model``: an exact entry, else the longest entry it starts with
    (``gpt-5-mini-2025-08-07`` is priced as ``gpt-5-mini``)."""
    if model in prices:
        return prices[model]
    matches = [name for name in prices if model.startswith(name)]
    return prices[max(matches, key=len)] if matches else None


def _one_line(text: Any, limit: int = 200) -> str:
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
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
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


class OpenAIBackend(LLM):
    """Chat completions through the ``openai`` package; one instance serves many threads.

    Args:
        model: model name (else ``RAISE_LLM_MODEL`` / ``OPENAI_MODEL``).
        base_url: endpoint (else ``OPENAI_BASE_URL``, else the OpenAI API).
        api_key: key (else ``OPENAI_API_KEY``; local endpoints without a key get "EMPTY").
        timeout: seconds per request.
        max_attempts: requests per call, first included (``max_attempts - 1`` retries).
        backoff_base, backoff_max: the n-th retry waits ``min(backoff_max, backoff_base * 2**n)``
            times a jitter factor in [0.5, 1], or what ``Retry-After`` asks (capped by
            ``retry_after_max``).
        prices: entries added to / overriding ``DEFAULT_PRICES`` (model -> ``Price`` or (in, out)).
        request_options: extra keyword arguments for ``chat.completions.create``
            (``temperature``, ``max_completion_tokens``, ...).
        sleep, seed: injectable waiting function and jitter seed (tests).
    """

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_attempts: int = 6, backoff_base: float = 1.0,
                 backoff_max: float = 60.0, retry_after_max: float = 120.0,
                 prices: Mapping[str, Price | tuple[float, float]] | None = None,
                 request_options: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep, seed: int | None = None,
                 do_auto_trim: bool = True):
        super().__init__(do_auto_trim=do_auto_trim)
        env_model = next((os.environ[v] for v in ENV_MODEL if os.environ.get(v)), None)
        self.model = model or env_model
        if not self.model:
            raise LLMConfigError(f"no model given: pass one (e.g. 'openai:gpt-5-mini') or set {ENV_MODEL[0]}")
        self.base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        key = api_key or os.environ.get(ENV_API_KEY)
        if not key:
            if not self.base_url:
                raise LLMConfigError(f"no API key: set {ENV_API_KEY} or pass an API key "
                                     f"(or point {ENV_BASE_URL} at a local server)")
            key = "EMPTY"  # local servers (vLLM, Ollama) accept any key
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if timeout <= 0 or backoff_base < 0 or backoff_max < 0:
            raise ValueError("timeout must be > 0 and back-off delays >= 0")
        self.timeout = float(timeout)
        self.max_attempts = int(max_attempts)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.retry_after_max = float(retry_after_max)
        self.request_options = dict(request_options or {})
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES)
        for name, price in dict(prices or {}).items():
            self.set_price(name, price)
        self._sleep = sleep
        self._jitter = random.Random(seed)
        self._jitter_lock = threading.Lock()
        self._fatal: str | None = None
        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)
        self.usage = UsageLedger(backend="openai", model=self.model,
                                 priced=price_for(self.model, self.prices) is not None)

    # -- configuration ---------------------------------------------------------
    def set_price(self, model: str, price: Price | tuple[float, float]) -> None:
        """Set the price of ``model`` in US dollars per 1M input / output tokens."""
        self.prices[model] = price if isinstance(price, Price) else Price(*price)
        if hasattr(self, "usage"):
            self.usage.priced = price_for(self.model, self.prices) is not None

    def describe(self) -> str:
        where = self.base_url or "the OpenAI API"
        return f"OpenAI-compatible chat model {self.model!r} at {where}"

    @property
    def calls(self) -> int:
        return self.usage.total().calls

    @property
    def failures(self) -> int:
        return self.usage.total().failures

    @property
    def retries(self) -> int:
        return self.usage.total().retries

    # -- sampling --------------------------------------------------------------
    def draw_sample(self, prompt: str | Any, *args, operator: str | None = None, **kwargs) -> str:
        """The model's answer to ``prompt``; ``""`` (a counted failure) when no usable answer came.

        Raises ``LLMConfigError`` on a refused key or unknown model, and ``LLMAborted``
        on every call after that.
        """
        if self._fatal is not None:
            raise LLMAborted(self._fatal)
        op = operator or infer_operator(prompt)
        messages = to_messages(prompt)
        retries = 0
        for attempt in range(self.max_attempts):
            try:
                response = self._client.chat.completions.create(
                    model=self.model, messages=messages, stream=False, **self.request_options)
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
                self.usage.record(op, failed=True, retries=retries)
                raise self._refused(exc) from None
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError,
                    openai.APIStatusError) as exc:
                status = getattr(exc, "status_code", None)
                transient = status is None or status in _RETRYABLE_STATUS or status >= 500
                if transient and attempt + 1 < self.max_attempts:
                    delay = self._delay(attempt, _retry_after(exc))
                    log.info("LLM request failed (%s); retry %d in %.2f s", _describe_error(exc), attempt + 1, delay)
                    retries += 1
                    self._sleep(delay)
                    continue
                return self._failed(op, retries, _describe_error(exc)
                                    + (f" after {attempt + 1} attempts" if transient else ""))
            except (openai.APIError, ValueError) as exc:  # malformed body (bad JSON, wrong shape)
                return self._failed(op, retries, f"malformed response: {_one_line(exc)}")
            return self._read(response, op, retries)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _read(self, response: Any, op: str, retries: int) -> str:
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        price = price_for(self.model, self.prices)
        cost = price.cost(tokens_in, tokens_out) if price else 0.0
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        content = getattr(message, "content", None)
        ok = isinstance(content, str) and content.strip() != ""
        self.usage.record(op, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost,
                          failed=not ok, retries=retries)
        if not ok:
            why = "no choices" if not choices else "empty content"
            log.warning("LLM answer unusable (%s); counted as a failed sample", why)
            return ""
        return content

    def _failed(self, op: str, retries: int, why: str) -> str:
        self.usage.record(op, failed=True, retries=retries)
        log.warning("LLM call failed: %s; counted as a failed sample", why)
        return ""

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        with self._jitter_lock:
            jitter = 0.5 + 0.5 * self._jitter.random()
        return min(self.backoff_max, self.backoff_base * 2.0 ** attempt) * jitter

    def _refused(self, exc: Exception) -> LLMConfigError:
        status = getattr(exc, "status_code", "?")
        where = self.base_url or "the OpenAI API"
        detail = _one_line(getattr(exc, "message", exc))
        if status == 404:
            msg = (f"model {self.model!r} not found at {where} (HTTP 404: {detail}); "
                   f"check the model name ({ENV_MODEL[0]}) and the base URL ({ENV_BASE_URL})")
        else:
            msg = (f"{where} refused the API key (HTTP {status}: {detail}); "
                   f"check {ENV_API_KEY} and the key's access to model {self.model!r}")
        self._fatal = msg
        log.error("%s", msg)
        return LLMConfigError(msg)


def _describe_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if status is None:
        return f"{type(exc).__name__}: {_one_line(exc, 120)}"
    return f"HTTP {status}"
