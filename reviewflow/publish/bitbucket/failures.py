"""Bitbucket Cloud's refusals as reviewflow's typed errors (`client.py`), in the user's terms.

401: the token is refused (`PublishSetupError`). 404 while reading: no such repository or pull
request (`PublishSetupError`); 403 while reading: the token cannot read them
(`PublishSetupError`). 403 on a write: a token without the `pullrequest:write` scope, such as
a read-only repository access token (`PublishRefused`). 429: Bitbucket's rate limit
(`TransientPublishError`); Bitbucket Cloud sends no `Retry-After` (its limits are counted over a
rolling hour), so `wait_s` is `Retry-After` when one comes, else a minute (`waits.py`). 5xx and
connection failures: `TransientPublishError`. Every message is scrubbed of the token.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import requests

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.publish.sessions import unreachable
from reviewflow.publish.waits import retry_wait
from reviewflow.pullrequest.models import RequestRef

TOKEN_REFUSED = (
    "the Bitbucket token was refused (HTTP 401): it must be a repository, project or workspace"
    " access token"
)
_DETAIL_CHARS = 300


def unusable_url() -> tuple[type[Exception], ...]:
    """The requests errors that mean the API URL itself cannot be used (retrying is no help)."""
    return (
        requests.exceptions.SSLError,
        requests.exceptions.InvalidURL,
        requests.exceptions.MissingSchema,
        requests.exceptions.InvalidSchema,
    )


def failure(
    err: requests.RequestException,
    action: str,
    ref: RequestRef,
    scrub: Callable[[str], str],
    *,
    reading: bool,
) -> PublishError:
    """The error to raise for `err`, met while doing `action` on `ref`'s pull request."""
    response = err.response
    if response is None or not isinstance(err, requests.HTTPError):
        return TransientPublishError(
            f"Bitbucket could not be reached ({action}): {unreachable(err)}"
        )
    code = response.status_code
    detail = scrub(" ".join(str(err).split())[:_DETAIL_CHARS]) or f"HTTP {code}"
    if code == 401:
        return TokenRefused(TOKEN_REFUSED)
    if code == 429:
        wait_s = retry_wait(response.headers, time.time())
        return TransientPublishError(
            f"Bitbucket rate-limited {action} (HTTP 429): retry in {wait_s:.0f} s", wait_s
        )
    if code >= 500:
        return TransientPublishError(f"Bitbucket failed {action} (HTTP {code}: {detail})")
    if code == 404 and reading:
        return PublishSetupError(_not_found(ref, detail))
    if code == 403:
        message = (
            f"Bitbucket refused {action} on {_what(ref)} (HTTP 403: {detail}): the token lacks"
            " the permission (pull requests: write; a read-only token can only read)"
        )
        return PublishSetupError(message) if reading else PublishRefused(message)
    return PublishRefused(f"Bitbucket refused {action} (HTTP {code}: {detail})")


def _not_found(ref: RequestRef, detail: str) -> str:
    if "repositor" in detail.lower():
        return (
            f"Bitbucket repository {ref.repo!r} was not found at {ref.api_url} (HTTP 404): check"
            " BITBUCKET_REPO_FULL_NAME or --platform-repo, and that the token can read it"
        )
    return (
        f"{_what(ref)} was not found at {ref.api_url} (HTTP 404): check BITBUCKET_PR_ID or"
        " --pull-request"
    )


def _what(ref: RequestRef) -> str:
    return f"pull request #{ref.number} of Bitbucket repository {ref.repo!r}"
