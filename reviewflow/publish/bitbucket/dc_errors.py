"""Bitbucket Data Center's refusals as reviewflow's typed errors (`reviewflow.errors`), for
`dc.BitbucketServerClient`.

Bitbucket answers errors as `{"errors": [{"context", "message", "exceptionName"}]}`;
atlassian-python-api raises them as a `requests.HTTPError` whose text is their messages and
whose `response` keeps the status and headers. 401 while reading: the token is refused. 401 or
403 on a write: the token cannot write ("The currently authenticated user has insufficient
permissions", Bitbucket's 401 on adding a comment), refused for good. 404 while reading: the
project, repository or pull request is missing, or hidden from the token. 429 (Bitbucket's rate
limiting, with `Retry-After`) and 5xx are transient; so is a 409 on an edit (the comment's
`version` is stale), where the retry reads the new one. Messages never hold the token.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.publish.waits import retry_wait

TOKEN_REFUSED = (
    "the Bitbucket token was refused (HTTP 401): it must be an HTTP access token with"
    " Repository write permission"
)
_CONFLICT_WAIT_S = 2.0
_DETAIL_CHARS = 300


@dataclass(frozen=True)
class Attempt:
    action: str  # "posting a comment on src/app.py"
    what: str  # "pull request #7 of Bitbucket repository 'PROJ/app'"
    server: str  # the server's base URL
    reading: bool


def failure(
    err: requests.HTTPError,
    attempt: Attempt,
    *,
    conflict_transient: bool,
    scrub: Callable[[str], str],
) -> PublishError:
    """`err` as the error reviewflow's publishing understands."""
    code = status_of(err)
    detail = scrub(detail_of(err))
    action = attempt.action
    if code == 429:
        headers = err.response.headers if err.response is not None else {}
        wait_s = retry_wait(headers, time.time())
        return TransientPublishError(
            f"Bitbucket rate-limited {action} (HTTP 429): retry in {wait_s:.0f} s", wait_s
        )
    if code is not None and code >= 500:
        return TransientPublishError(f"Bitbucket failed {action} (HTTP {code}: {detail})")
    if code == 401 and attempt.reading:
        return TokenRefused(TOKEN_REFUSED)
    if code == 403 and attempt.reading:
        return PublishSetupError(f"Bitbucket refused reading {attempt.what} (HTTP 403: {detail})")
    if code in (401, 403):
        return PublishRefused(
            f"Bitbucket refused {action} on {attempt.what} (HTTP {code}: {detail}): the token"
            " lacks Repository write permission (a read-only token, or a fork's)"
        )
    if code == 404 and attempt.reading:
        return PublishSetupError(
            f"{attempt.what} was not found at {attempt.server} (HTTP 404: {detail}): check"
            " --platform-repo (PROJECT_KEY/repo-slug, ~user/repo-slug for a personal"
            " repository), --pull-request, and that the token can read the repository"
        )
    if code == 409 and conflict_transient:
        return TransientPublishError(
            f"Bitbucket refused {action}: the comment changed meanwhile (HTTP 409: {detail})",
            _CONFLICT_WAIT_S,
        )
    return PublishRefused(f"Bitbucket refused {action} (HTTP {code}: {detail})")


def status_of(err: requests.HTTPError) -> int | None:
    return err.response.status_code if err.response is not None else None


def detail_of(err: requests.HTTPError) -> str:
    """Bitbucket's error messages (the library's text of the error), on one bounded line."""
    return " ".join(str(err).split())[:_DETAIL_CHARS] or type(err).__name__


def about_anchor(message: str) -> bool:
    """Whether a 400 on adding a file comment is about its anchor (not its text)."""
    lowered = message.lower()
    return any(word in lowered for word in ("anchor", "line", "diff"))
