"""What may be shown or recorded of a URL or a command line that can carry credentials: a base URL
with a password (``https://user:PASSWORD@host/v1``) or a token as its user is shown as
``https://***@host/v1``, and one with a token in its query (``?key=TOKEN``) as ``?key=***``, in
``config.json``, the run's lines and summary, and the run lock's command line alike."""
from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["HIDDEN", "shown_url", "hides_credentials", "shown_command", "shown_text", "HiddenCredentials"]

HIDDEN = "***"  # what stands for a URL's credentials wherever it is shown or recorded


def shown_url(url: str | None) -> str | None:
    """``url`` as it may be shown or recorded: its credentials (``https://user:PASSWORD@host/v1``,
    or a token as the user, ``https://TOKEN@host/v1``) and the values of its query's secret
    parameters (``?key=TOKEN``, ``&access_token=...``: ``_SECRET_PARAMETER``) replaced by ``***``;
    the same URL where it holds none."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" in parts.netloc:
        parts = parts._replace(netloc=f"{HIDDEN}@{parts.netloc.rpartition('@')[2]}")
    if parts.query:
        parts = parts._replace(query=_QUERY_SECRET.sub(rf"\1{HIDDEN}", parts.query))
    return urlunsplit(parts)


# the query parameters that carry a key, a token, a password or a signature, by their names
_SECRET_PARAMETER = (r"(?:api[-_]?key|key|token|access[-_]?token|auth|authorization|secret|client[-_]?secret"
                     r"|password|passwd|pwd|sig|signature)")
_QUERY_SECRET = re.compile(rf"(?i)((?:^|[&;]){_SECRET_PARAMETER}=)[^&;#]*")
_URL_CREDENTIALS = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]*@")
_TEXT_QUERY_SECRET = re.compile(rf"(?i)([?&;]{_SECRET_PARAMETER}=)[^&;#\s\"']*")


def shown_text(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced, as ``shown_url`` replaces them."""
    return _TEXT_QUERY_SECRET.sub(rf"\1{HIDDEN}", _URL_CREDENTIALS.sub(rf"\1{HIDDEN}@", text))


class HiddenCredentials(logging.Filter):
    """A log handler's filter: each record's message with its URLs' credentials hidden (``shown_text``); the
    HTTP client logs every request's URL, credentials and all."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        shown = shown_text(message)
        if shown != message:
            record.msg, record.args = shown, ()
        return True


def hides_credentials(url: str | None) -> bool:
    """Whether ``url`` is one whose credentials ``shown_url`` hid."""
    if not url:
        return False
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[0] == HIDDEN or any(
        match.group(0).endswith(f"={HIDDEN}") for match in _QUERY_SECRET.finditer(parts.query))


def shown_command(args) -> str:
    """A command line as it may be shown or recorded: every URL in it, alone or as a flag's
    ``--flag=URL``, with its credentials hidden."""
    shown = []
    for arg in args:
        flag, equals, value = arg.partition("=") if arg.startswith("-") else ("", "", arg)
        shown.append(flag + equals + shown_url(value) if "://" in value else arg)
    return " ".join(shown)
