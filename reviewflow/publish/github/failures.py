"""githubkit's failures as reviewflow's typed publishing errors (`client.py` states the contract).

Messages name the action, the pull request and GitHub's own message; never the token (a githubkit
exception holds the request, Authorization header included: nothing here formats it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

import pydantic
from githubkit.exception import (
    GitHubException,
    GraphQLFailed,
    RateLimitExceeded,
    RequestFailed,
    RequestTimeout,
)
from githubkit.exception import RequestError as GitHubRequestError

from reviewflow.errors import (
    PublishError,
    PublishRefused,
    PublishSetupError,
    TokenRefused,
    TransientPublishError,
)
from reviewflow.pullrequest.models import RequestRef

MAX_DETAIL = 200
MIN_WAIT_S = 1.0
MAX_WAIT_S = 900.0
UNSET_WAIT_S = 60.0
"""GitHub's advice when a rate limit names no time: wait at least a minute."""
REDACTED = "[REDACTED]"
TOKEN_REFUSED = "the GitHub token was refused (HTTP 401): it needs pull-requests: write"


class Action(StrEnum):
    """What the client was doing, as a failure's message says it."""

    READ_PULL = "reading the pull request"
    READ_THREADS = "reading its review threads"
    READ_NOTES = "reading its comments"
    POST = "posting a review"
    RESOLVE = "resolving a review thread"
    NOTE = "writing the summary comment"

    @property
    def reading(self) -> bool:
        return self in (Action.READ_PULL, Action.READ_THREADS, Action.READ_NOTES)


@contextmanager
def guarded(action: Action, ref: RequestRef, token: str) -> Iterator[None]:
    """Raise githubkit's failures inside as `PublishError`s, the token redacted."""
    try:
        yield
    except GitHubException as exc:
        raise _failure(exc, action, ref).redacted(token) from None
    except pydantic.ValidationError as exc:
        where = ".".join(str(part) for part in exc.errors()[0]["loc"]) if exc.errors() else ""
        raise _Failure(
            PublishError, f"GitHub's answer to {action} did not parse ({where or 'body'})"
        ).redacted(token) from None


class _Failure:
    """An error type and its message, built before the token is taken out."""

    def __init__(self, kind: type[PublishError], message: str, wait_s: float = 0.0) -> None:
        self.kind, self.message, self.wait_s = kind, message, wait_s

    def redacted(self, token: str) -> PublishError:
        message = self.message.replace(token, REDACTED) if token else self.message
        if issubclass(self.kind, TransientPublishError):
            return self.kind(message, wait_s=self.wait_s)
        return self.kind(message)


def _failure(exc: GitHubException, action: Action, ref: RequestRef) -> _Failure:
    where = f"{ref.repo}#{ref.number}"
    if isinstance(exc, RateLimitExceeded):
        wait_s = _clamped(exc.retry_after.total_seconds())
        status = exc.response.status_code
        how = "GraphQL RATE_LIMITED" if status == 200 else f"HTTP {status}"
        return _Failure(
            TransientPublishError,
            f"GitHub rate-limited {action} on {where} ({how}): retry in {wait_s:.0f} s",
            wait_s,
        )
    if isinstance(exc, RequestFailed):
        return _status_failure(exc, action, ref)
    if isinstance(exc, RequestTimeout):
        return _Failure(TransientPublishError, f"GitHub did not answer {action} on {where} in time")
    if isinstance(exc, GitHubRequestError):
        return _Failure(
            TransientPublishError,
            f"could not reach GitHub at {ref.api_url} while {action}: "
            f"{type(exc.exc).__name__}: {_short(str(exc.exc))}",
        )
    if isinstance(exc, GraphQLFailed):
        return _graphql_failure(exc, action, ref)
    return _Failure(PublishError, f"GitHub failed {action} on {where}: {type(exc).__name__}")


def _status_failure(exc: RequestFailed, action: Action, ref: RequestRef) -> _Failure:
    status = exc.response.status_code
    detail = _github_message(exc.response.json)
    where = f"{ref.repo}#{ref.number}"
    if status == 401:
        return _Failure(TokenRefused, TOKEN_REFUSED)
    if status == 404 and action.reading:
        return _Failure(
            PublishSetupError,
            f"GitHub found no pull request {where} at {ref.api_url} (HTTP 404): check the "
            "repository, the number and that the token can read the repository",
        )
    if status == 429:
        return _Failure(
            TransientPublishError,
            f"GitHub rate-limited {action} on {where} (HTTP 429): {detail}",
            UNSET_WAIT_S,
        )
    if status >= 500:
        return _Failure(
            TransientPublishError, f"GitHub failed {action} on {where} (HTTP {status}): {detail}"
        )
    kind = PublishSetupError if action.reading else PublishRefused
    return _Failure(kind, f"GitHub refused {action} on {where} (HTTP {status}): {detail}")


def _graphql_failure(exc: GraphQLFailed, action: Action, ref: RequestRef) -> _Failure:
    errors = exc.response.errors or []
    types = {e.type for e in errors}
    detail = _short("; ".join(e.message for e in errors)) or "no message"
    where = f"{ref.repo}#{ref.number}"
    if "NOT_FOUND" in types and action.reading:
        return _Failure(
            PublishSetupError, f"GitHub found no pull request {where} (GraphQL): {detail}"
        )
    if types & {"INTERNAL", "SERVICE_UNAVAILABLE", "TIMEOUT"}:
        return _Failure(TransientPublishError, f"GitHub failed {action} on {where}: {detail}")
    kind = PublishSetupError if action.reading else PublishRefused
    named = ", ".join(sorted(t for t in types if t)) or "GraphQL error"
    return _Failure(kind, f"GitHub refused {action} on {where} ({named}): {detail}")


def _github_message(body: Any) -> str:
    """GitHub's `message` and its first `errors`, from `body()` (a response's JSON)."""
    try:
        data = body()
    except ValueError:
        return "no message"
    if not isinstance(data, dict):
        return "no message"
    parts = [str(data.get("message") or "no message")]
    for error in (data.get("errors") or [])[:3]:
        parts.append(str(error.get("message") or error) if isinstance(error, dict) else str(error))
    return _short(": ".join(parts))


def _clamped(seconds: float) -> float:
    return min(max(seconds, MIN_WAIT_S), MAX_WAIT_S)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"
