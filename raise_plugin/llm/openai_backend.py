"""An OpenAI-compatible chat back-end (OpenAI, vLLM, llama.cpp, Ollama, ...): bounded, counted requests.

Configuration, first found wins: constructor arguments, then the environment:
``OPENAI_BASE_URL`` (default: the OpenAI API), ``OPENAI_API_KEY`` and the model in
``RAISE_LLM_MODEL`` or ``OPENAI_MODEL``. The ``openai`` client's own retries are off;
this class retries rate limits (429), time-outs, connection errors, answers cut off
mid-body and server errors (5xx) itself, with exponential back-off and jitter, honouring
``Retry-After``. Every request passes the usage ledger first, which caps and journals it.

Whatever the endpoint does, a call ends: each request has a deadline for its whole answer
(a model that never stops generating is cut off there), a refused key or unknown model
ends the run at once, an endpoint never reached ends it after one call's attempts, and
the ledger ends it after ``max_failed_requests`` requests in a row without a usable program.
One request, and how it ended: ``openai_request``.
"""
from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Any, Callable, Mapping

from llm4ad.base import LLM

from raise_plugin.credentials import shown_url
from raise_plugin.settings import default, fallback

from .errors import EndpointFailed, LLMAborted, LLMCapReached, LLMConfigError
from .openai_request import LONG_WAIT, Outcome, WaitingNotice, notices, one_line, send, to_messages
from .operators import infer_operator
from .prices import DEFAULT_PRICES, Price, price_for
from .usage import LENGTH, OK, UsageLedger

__all__ = ["OpenAIBackend", "ENV_BASE_URL", "ENV_API_KEY", "ENV_MODEL", "OPENAI_API_URL", "endpoint_url",
           "environment_model", "endpoint_configured"]

log = logging.getLogger("raise_plugin.llm")

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = ("RAISE_LLM_MODEL", "OPENAI_MODEL")

DEFAULT_MAX_FAILED_REQUESTS = default("max_failed_requests")
OPENAI_API_URL = "https://api.openai.com/v1"  # the endpoint when neither an argument nor the environment names one


def endpoint_url(base_url: str | None = None) -> str:
    """The endpoint an ``openai`` back-end calls: ``base_url``, else ``OPENAI_BASE_URL``, else the OpenAI API."""
    return base_url or os.environ.get(ENV_BASE_URL) or OPENAI_API_URL


def environment_model() -> str | None:
    """The model the environment names (``ENV_MODEL``, in order), or ``None``."""
    return next((os.environ[v] for v in ENV_MODEL if os.environ.get(v)), None)


def endpoint_configured() -> bool:
    """Whether the environment names an endpoint (key or base URL) and a model."""
    has_endpoint = bool(os.environ.get(ENV_API_KEY) or os.environ.get(ENV_BASE_URL))
    return has_endpoint and environment_model() is not None


class OpenAIBackend(LLM):
    """Chat completions through the ``openai`` package; one instance serves many threads.

    Args:
        model: model name (else ``RAISE_LLM_MODEL`` / ``OPENAI_MODEL``).
        base_url: endpoint (else ``OPENAI_BASE_URL``, else the OpenAI API).
        api_key: key (else ``OPENAI_API_KEY``; local endpoints without a key get "EMPTY").
        timeout: seconds a request may take, its whole answer included (a model that never
            stops generating is cut off here); connecting may take ``connect_timeout`` of them.
        max_attempts: requests per call, first included (``max_attempts - 1`` retries).
        backoff_base, backoff_max: the n-th retry waits ``min(backoff_max, backoff_base * 2**n)``
            times a jitter factor in [0.5, 1], or what ``Retry-After`` asks (capped by
            ``retry_after_max``).
        max_tokens: completion tokens per request, sent to the endpoint (``max_completion_tokens``
            to the OpenAI API, ``max_tokens`` to others).
        max_failed_requests: requests in a row without a usable program before the run stops.
        prices: entries added to / overriding ``DEFAULT_PRICES`` (model -> ``Price`` or (in, out)).
        request_options: extra keyword arguments for ``chat.completions.create`` (``temperature``, ...).
        wait_notice: seconds into a request before the run says it is waiting (0: never).
        sleep, seed: injectable waiting function (by default the ledger's ``pause``, which a stop of
            the run ends) and jitter seed (tests).
    """

    def __init__(self, model: str | None = None, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = fallback("llm_timeout"), connect_timeout: float = 5.0, max_attempts: int = 4,
                 backoff_base: float = 0.5, backoff_max: float = 8.0, retry_after_max: float = 60.0,
                 max_tokens: int | None = None, max_failed_requests: int | None = DEFAULT_MAX_FAILED_REQUESTS,
                 prices: Mapping[str, Price | tuple[float, float]] | None = None,
                 request_options: Mapping[str, Any] | None = None, wait_notice: float = LONG_WAIT,
                 sleep: Callable[[float], None] | None = None, seed: int | None = None,
                 do_auto_trim: bool = True):
        super().__init__(do_auto_trim=do_auto_trim)
        self.model = model or environment_model()
        if not self.model:
            raise LLMConfigError(f"no model given: pass one (e.g. 'openai:gpt-5-mini') or set {ENV_MODEL[0]}")
        self.base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        key = (api_key or os.environ.get(ENV_API_KEY) or "").strip()  # a key from a file or a .env ends in a newline
        if not (key.isascii() and key.isprintable()):  # the HTTP client's error would quote it whole, in every record
            raise LLMConfigError(f"the API key ({ENV_API_KEY}, or api_key) holds a control or a non-ASCII character: "
                                 f"set it again as the provider gave it (it is not shown)")
        if not key:
            if self.official:
                raise LLMConfigError(f"no API key: set {ENV_API_KEY} or pass an API key "
                                     f"(or point {ENV_BASE_URL} at a local server)")
            key = "EMPTY"  # local servers (vLLM, llama.cpp, Ollama) accept any key
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if timeout <= 0 or connect_timeout <= 0 or backoff_base < 0 or backoff_max < 0:
            raise ValueError("timeouts must be > 0 and back-off delays >= 0")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.timeout = float(timeout)
        self.connect_timeout = min(float(connect_timeout), self.timeout)
        self.max_attempts = int(max_attempts)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.retry_after_max = float(retry_after_max)
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.wait_notice = float(wait_notice)
        self.request_options = dict(request_options or {})
        if self.max_tokens is not None:
            self.request_options[self.max_tokens_field] = self.max_tokens
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES)
        for name, price in dict(prices or {}).items():
            self.set_price(name, price)
        self._sleep = sleep  # None: the ledger's pause, which a stop of the run ends at once
        self._jitter = random.Random(seed)
        self._jitter_lock = threading.Lock()
        self._fatal: str | None = None
        self._reached = False  # the endpoint answered once (any HTTP status)
        import openai  # here, not at import: it takes half a second to load

        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0)
        self.usage = UsageLedger(backend="openai", model=self.model,
                                 priced=price_for(self.model, self.prices) is not None,
                                 endpoint=self.where, max_failed_requests=max_failed_requests)

    # -- configuration ---------------------------------------------------------
    def set_price(self, model: str, price: Price | tuple[float, float]) -> None:
        """Set the price of ``model`` in US dollars per 1M input / output tokens."""
        self.prices[model] = price if isinstance(price, Price) else Price(*price)
        if hasattr(self, "usage"):
            self.usage.priced = price_for(self.model, self.prices) is not None

    @property
    def priced(self) -> bool:
        return price_for(self.model, self.prices) is not None

    @property
    def where(self) -> str:
        return shown_url(self.base_url) or "the OpenAI API"

    @property
    def official(self) -> bool:
        """Whether the endpoint is the OpenAI API (not a local or other compatible server)."""
        return self.base_url is None or "api.openai.com" in self.base_url

    @property
    def max_tokens_field(self) -> str:
        """The OpenAI API wants ``max_completion_tokens`` (its reasoning models refuse ``max_tokens``);
        OpenAI-compatible servers (vLLM, llama.cpp, Ollama) read ``max_tokens``."""
        return "max_completion_tokens" if self.official else "max_tokens"

    def describe(self) -> str:
        return f"OpenAI-compatible chat model {self.model!r} at {self.where}"

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
        """The model's answer to ``prompt``; ``""`` (a counted failure) when no answer came.

        Raises ``LLMConfigError`` on a refused key or unknown model (``LLMAborted`` on every
        call after that), ``LLMCapReached`` when a cap leaves no room for a request, and
        ``EndpointFailed`` when the endpoint cannot be reached or keeps failing.
        """
        if self._fatal is not None:
            raise LLMAborted(self._fatal)
        op = operator or infer_operator(prompt)
        messages = to_messages(prompt)
        outcome, sent = Outcome("none"), False
        try:
            for attempt in range(self.max_attempts):
                rid = self.usage.begin_request(op, attempt)
                sent = True
                start = time.monotonic()
                waiting = WaitingNotice(self.where, self.timeout, self.wait_notice)
                try:
                    outcome = send(self._client, self.model, messages, timeout=self.timeout,
                                   connect_timeout=self.connect_timeout, request_options=self.request_options)
                except Exception as exc:  # noqa: BLE001 - a fault of ours or the client's, counted as a failed
                    # request: raised past the ledger, the host would ask again at once, uncounted and without end
                    outcome = Outcome("client_error", why=f"the request failed in the client "
                                                          f"({type(exc).__name__}: {one_line(exc, 120)})")
                finally:
                    waiting.close()
                price = price_for(self.model, self.prices)
                cost = price.cost(outcome.input_tokens, outcome.output_tokens) if price else 0.0
                self.usage.end_request(rid, outcome.kind, input_tokens=outcome.input_tokens,
                                       output_tokens=outcome.output_tokens, cost_usd=cost,
                                       seconds=time.monotonic() - start, why=outcome.why)
                if outcome.status is not None:
                    self._reached = True
                if outcome.kind in (OK, LENGTH):
                    self.usage.set_last_call(op, input_tokens=outcome.input_tokens,
                                             output_tokens=outcome.output_tokens, cost_usd=cost, retries=attempt,
                                             kind=outcome.kind)
                    if outcome.kind == LENGTH:
                        notices.warning("LLM answer cut off at the completion-token cap (%s)",
                                        self.max_tokens or "the server's")
                    return outcome.text
                if outcome.fatal is not None:
                    self.usage.call_failed(op)
                    raise self._refused(outcome.fatal) from None
                if outcome.retryable and attempt + 1 < self.max_attempts:
                    self.usage.check()  # a cap or the failure bound reached: stop now, not after the back-off
                    delay = self._delay(attempt, outcome.retry_after)
                    notices.log(logging.WARNING if delay >= LONG_WAIT else logging.INFO,
                                "LLM request failed (%s); retry %d in %.2f s", outcome.why, attempt + 1, delay)
                    (self._sleep or self.usage.pause)(delay)
                    continue
                break
        except (EndpointFailed, LLMCapReached):  # the failure bound or a cap, reached between its attempts
            if sent:
                self.usage.call_failed(op)  # so the call ends without an answer
            raise
        self.usage.call_failed(op)
        self.usage.set_last_call(op, failed=True, retries=attempt, kind=outcome.kind)
        if not self._reached and outcome.kind == "connection":
            raise EndpointFailed(f"cannot reach the LLM at {self.where}: {outcome.why} ({attempt + 1} attempts); "
                                 f"check the base URL ({ENV_BASE_URL}) and that the server is running")
        notices.warning("LLM call failed: %s%s; counted as a failed sample", outcome.why,
                        f" after {attempt + 1} attempts" if outcome.retryable else "")
        return ""

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        with self._jitter_lock:
            jitter = 0.5 + 0.5 * self._jitter.random()
        return min(self.backoff_max, self.backoff_base * 2.0 ** attempt) * jitter

    def _refused(self, exc: Exception) -> LLMConfigError:
        status = getattr(exc, "status_code", "?")
        detail = one_line(getattr(exc, "message", exc))
        if status == 404:
            msg = (f"model {self.model!r} not found at {self.where} (HTTP 404: {detail}); "
                   f"check the model name ({ENV_MODEL[0]}) and the base URL ({ENV_BASE_URL})")
        else:
            msg = (f"{self.where} refused the API key (HTTP {status}: {detail}); "
                   f"check {ENV_API_KEY} and the key's access to model {self.model!r}")
        self._fatal = msg
        log.error("%s", msg)
        return LLMConfigError(msg)
