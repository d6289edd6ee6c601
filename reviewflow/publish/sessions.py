"""What the clients built on `requests` (GitLab's, both Bitbucket's, Azure DevOps') share: a
session that counts every request it sends (redirects too: the bench's API calls) and keeps the
last answer's headers, the errors that mean the API's URL itself cannot be used, and why a
request got no answer, said in a user's words (Gitea's httpx client too)."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import requests

UNUSABLE_URL = (
    requests.exceptions.SSLError,
    requests.exceptions.InvalidURL,
    requests.exceptions.MissingSchema,
    requests.exceptions.InvalidSchema,
)


class CountingSession(requests.Session):
    """Calls `on_send` before every request; `last_headers` are the last answer's."""

    def __init__(self, on_send: Callable[[], None]) -> None:
        super().__init__()
        self._on_send = on_send
        self.last_headers: Mapping[str, str] = {}

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self._on_send()
        self.last_headers = {}
        response = super().send(request, **kwargs)
        self.last_headers = response.headers
        return response


def unreachable(err: requests.RequestException) -> str:
    """Why a request got no answer, in a user's words (never urllib3's pool and retry text):
    the host and port, then: no answer in time, refused, a name not found, or the connection
    dropped."""
    url = getattr(err.request, "url", None)
    where = urllib.parse.urlsplit(url).netloc if isinstance(url, str) else ""
    reason = "no answer in time" if isinstance(err, requests.Timeout) else no_answer(err)
    return f"{where}: {reason}" if where else reason


def no_answer(err: Exception) -> str:
    """Why a connection gave no answer, from any HTTP library's error, in a user's words."""
    text = str(err).lower()
    return next((said for cue, said in _REASONS if cue in text), "the connection failed or dropped")


_REASONS = (
    ("refused", "connection refused"),
    ("name or service not known", "the host name was not found"),
    ("nodename nor servname", "the host name was not found"),
    ("temporary failure in name resolution", "the host name was not found"),
    ("reset by peer", "the connection was reset"),
    ("remotedisconnected", "the server closed the connection without an answer"),
)
