"""The endpoint a recorded run calls and what its ``config.json`` keeps of it: the back-end (its
model pinned) and base URL a new run records, the base URL without its credentials, and the one a
resumed run calls (with an ``EndpointWarning`` when that is not simply the recorded one)."""
from __future__ import annotations

import os

from ..credentials import hides_credentials, shown_url
from ..errors import PluginWarning, UserError
from .openai_backend import ENV_BASE_URL, endpoint_configured, endpoint_url, environment_model

__all__ = ["EndpointWarning", "started_endpoint", "recorded_settings_of", "resumed_endpoint"]


class EndpointWarning(PluginWarning):
    """A resumed run calls another endpoint than it would by default: which one, and why."""


def started_endpoint(backend: str, base_url: str | None) -> tuple[str, str | None]:
    """What a new run records of the endpoint it calls, so that resume calls the same: its back-end,
    ``openai`` without a model (or ``auto``) as it resolves now, the model the environment names
    pinned (``openai:MODEL``); and its base URL, the one given, else an ``openai`` back-end's
    endpoint (``OPENAI_BASE_URL``, else the OpenAI API)."""
    kind, _, arg = str(backend).strip().partition(":")
    if kind.lower() == "auto" and not arg:
        return started_endpoint("openai" if endpoint_configured() else "offline", base_url)
    model = environment_model()
    backend = f"openai:{model}" if kind.lower() == "openai" and not arg and model else backend
    return backend, (endpoint_url() if backend.startswith("openai") and not base_url else base_url)


def recorded_settings_of(settings: dict) -> dict:
    """``settings`` as ``config.json`` records them: the base URL's credentials replaced by ``***``
    (resume takes them again from ``--base-url`` or ``OPENAI_BASE_URL``)."""
    data = dict(settings)
    if data.get("base_url"):
        data["base_url"] = shown_url(data["base_url"])
    return data


def resumed_endpoint(recorded: dict, changes: dict) -> tuple[dict, str | None]:
    """The base URL a resumed run of the ``recorded`` settings calls (in ``changes`` when it is
    not the recorded one), and a line saying so when it is not simply the recorded one; a run
    that calls no endpoint (not ``openai``) keeps ``changes``. A recorded URL whose credentials
    were hidden takes them from ``OPENAI_BASE_URL`` when that is the same URL; else the URL must
    be given again (``UserError``)."""
    if not str(recorded.get("llm", "")).startswith("openai"):
        return changes, None
    recorded_url = recorded.get("base_url")
    given, env = changes.get("base_url"), os.environ.get(ENV_BASE_URL)
    if given is not None:
        return changes, (None if recorded_url in (None, given, shown_url(given)) else
                         f"base URL {shown_url(given)} (given here) is used, not {recorded_url} the run started "
                         f"with; config.json now records {shown_url(given)}")
    if recorded_url is None:  # a run directory written before the base URL was recorded
        url = endpoint_url()
        return {**changes, "base_url": url}, (f"the run's config.json records no base URL (written before it was "
                                              f"kept): it continues against {shown_url(url)} (from "
                                              f"{ENV_BASE_URL if env else 'the default, the OpenAI API'}), "
                                              f"now recorded")
    hidden = hides_credentials(recorded_url)
    if env and shown_url(env).rstrip("/") == recorded_url.rstrip("/"):
        return ({**changes, "base_url": env}, None) if hidden else (changes, None)
    if hidden:
        raise UserError(f"the run's config.json records its base URL without its credentials ({recorded_url}); give "
                        f"the URL again with --base-url or {ENV_BASE_URL}")
    if env:
        return changes, (f"{ENV_BASE_URL} is {shown_url(env)}, but the run started against {recorded_url}: it "
                         f"continues against the recorded one (--base-url {shown_url(env)} moves it)")
    return changes, None
