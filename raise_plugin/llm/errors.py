"""Errors of the LLM back-ends: each message is one line a user can act on."""
from __future__ import annotations

from raise_plugin.errors import PluginWarning, UserError

__all__ = ["LLMConfigError", "LLMAborted", "LLMCapReached", "EndpointFailed", "ReplayMissError",
           "UnknownBackendError", "SamplerStallWarning"]


class LLMConfigError(UserError):
    """The endpoint refused the configuration: bad key (401/403) or unknown model (404).

    Retrying cannot help, so the back-end raises this at once and refuses later calls.
    """


class LLMAborted(BaseException):
    """Raised by a back-end on every call after an ``LLMConfigError``.

    It derives from ``BaseException`` on purpose: host search loops catch ``Exception``
    and retry forever, so a refused key would otherwise spin without end. The message
    is the original one-line reason.
    """


class LLMCapReached(LLMAborted):
    """A cap (requests, retries included, or dollars) leaves no room for the next request: the
    run stops cleanly, and ``raise-ahd resume`` with a higher cap continues it."""


class EndpointFailed(LLMAborted):
    """Too many requests in a row gave no usable program (errors, time-outs, unusable answers),
    or the endpoint could not be reached: the run stops with this one-line reason."""


class ReplayMissError(UserError):
    """A replayed run asked a prompt the recording does not hold (or holds fewer times)."""


class UnknownBackendError(UserError):
    """``make_llm`` was given a spec it does not know."""


class SamplerStallWarning(PluginWarning):
    """The offline sampler can write nothing but copies of the task's template: the task has no
    offline library and its template nothing to vary, so a run would spend its budget on one program."""
