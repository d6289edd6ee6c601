"""Typed provider failures: one-line messages naming protocol, model and status, never the key.

Every failure raised here is a `ProviderFailure`: it can carry the usage a rejected answer reported
(billed tokens) and, once `llm_request` has seen it, how many attempts the request took.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TypeVar

import httpx
import httpx2

from reviewflow.errors import PermanentProviderError, ProviderError, TransientProviderError
from reviewflow.providers.messages import Usage

MAX_DETAIL = 240
REDACTED = "[REDACTED]"
UNSENDABLE: tuple[type[Exception], ...] = (
    UnicodeError,
    ValueError,
    httpx.InvalidURL,  # not a ValueError
    httpx2.InvalidURL,
)
"""What the SDKs raise, unwrapped, for a request they cannot build: a bad URL or header."""
_UNSENDABLE_CAUSES = (*UNSENDABLE, httpx.UnsupportedProtocol, httpx2.UnsupportedProtocol)


class ProviderFailure(ProviderError):
    """A provider error with its accounting: usage a rejected answer reported, attempts taken."""

    usage: Usage | None = None
    attempts: int | None = None


FailureT = TypeVar("FailureT", bound=ProviderFailure)


class ProviderTimeoutError(ProviderFailure, TransientProviderError):
    """The request did not complete within the configured timeout."""


class EndpointUnreachableError(ProviderFailure, TransientProviderError):
    """The endpoint refused, dropped or never answered the connection."""


class RetryableStatusError(ProviderFailure, TransientProviderError):
    """The endpoint answered HTTP 408, 429 or 5xx."""


class EmptyAnswerError(ProviderFailure, TransientProviderError):
    """A well-formed answer that holds nothing (e.g. no choices)."""


class ProviderAuthError(ProviderFailure, PermanentProviderError):
    """The API key was rejected (HTTP 401/403)."""


class ModelNotFoundError(ProviderFailure, PermanentProviderError):
    """The endpoint does not know the model (HTTP 404)."""


class RequestRejectedError(ProviderFailure, PermanentProviderError):
    """The endpoint refused the request (another HTTP 4xx, a blocked prompt)."""


class MalformedAnswerError(ProviderFailure, PermanentProviderError):
    """A 2xx answer that is not the protocol's response (HTML, wrong JSON shape)."""


class UnsendableRequestError(ProviderFailure, PermanentProviderError):
    """The request could not be built: an invalid endpoint URL or a non-ASCII header."""


class SdkError(ProviderFailure, PermanentProviderError):
    """Any other failure the SDK reported."""


class MissingCredentialsError(ProviderFailure, PermanentProviderError):
    """A cloud platform's credential chain found nothing usable (no request was sent)."""


class BudgetExceeded(ProviderFailure, PermanentProviderError):
    """The review's budget (`review.max_tokens`, `review.max_cost`) refused the request: it was
    not sent (no attempt, no usage)."""

    attempts: int | None = 0


def not_sent(error: BaseException) -> bool:
    """Whether a failed request never left (the budget refused it)."""
    return isinstance(error, BudgetExceeded)


def never_reached(error: BaseException) -> bool:
    """Whether a failed request never reached the endpoint, so no attempt counts: the budget
    refused it, it could not be built, or there was no credential to send it with."""
    return isinstance(error, BudgetExceeded | UnsendableRequestError | MissingCredentialsError)


class RequestAbandonedError(ProviderFailure, PermanentProviderError):
    """The review was cancelled (its provider closed) while the request was in flight."""


def with_usage(error: FailureT, usage: Usage | None) -> FailureT:
    """`error`, carrying the usage the rejected answer reported."""
    error.usage = usage
    return error


def usage_of(error: BaseException) -> Usage | None:
    """The usage a failed request's answer reported, if any."""
    return error.usage if isinstance(error, ProviderFailure) else None


def attempts_of(error: BaseException) -> int | None:
    """How many attempts a failed request took, once `llm_request` has noted it."""
    return error.attempts if isinstance(error, ProviderFailure) else None


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret replaced, also as escaped (repr/JSON) or stripped text."""
    for secret in secrets:
        if not secret:
            continue
        forms = {
            secret,
            secret.strip(),
            repr(secret)[1:-1],
            json.dumps(secret)[1:-1],
            secret.encode("utf-8").decode("latin-1"),  # as a server may echo a UTF-8 header
        }
        for form in sorted(forms, key=len, reverse=True):
            if len(form) >= 4:
                text = text.replace(form, REDACTED)
    return text


def one_line(text: str, limit: int = MAX_DETAIL) -> str:
    """Collapse whitespace and cut to `limit` characters."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def detail_from_body(body: object) -> str:
    """The human part of an error body: `error.message`, `message`, or the text itself."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return str(body["message"])
        return json.dumps(body, sort_keys=True)
    if isinstance(body, list) and body:
        return detail_from_body(body[0])
    if body is None:
        return ""
    return str(body)


def _where(protocol: str, model: str) -> str:
    return f"{protocol} model '{model}'"


def status_error(
    protocol: str,
    model: str,
    status: int,
    detail: str,
    secret: str | None,
    credential: str = "API key",
) -> ProviderFailure:
    """The typed error for an HTTP error status, with a redacted one-line detail (`credential`:
    what a 401/403 refused, in the user's terms: a cloud platform's are not an API key)."""
    text = one_line(redact(detail, [secret]))
    suffix = f": {text}" if text else ""
    base = f"{_where(protocol, model)}: HTTP {status}"
    if status in (401, 403):
        return ProviderAuthError(f"{base} ({credential} rejected){suffix}")
    if status == 404:
        return ModelNotFoundError(f"{base} (unknown model or wrong endpoint){suffix}")
    if status == 501:  # Not Implemented: the wrong URL or protocol, never worth a retry
        return RequestRejectedError(f"{base} (not implemented: wrong endpoint or protocol){suffix}")
    if status in (408, 429) or status >= 500:
        return RetryableStatusError(f"{base}{suffix}")
    return RequestRejectedError(f"{base}{suffix}")


def timeout_error(protocol: str, model: str, timeout: float) -> ProviderTimeoutError:
    """The error for a request that exceeded the configured timeout."""
    return ProviderTimeoutError(f"{_where(protocol, model)}: no answer within {timeout:g}s")


def abandoned_error(protocol: str, model: str) -> RequestAbandonedError:
    """The error for a request left unanswered because the review was cancelled."""
    return RequestAbandonedError(f"{_where(protocol, model)}: request abandoned (review cancelled)")


def connection_error(
    protocol: str, model: str, endpoint: str, cause: BaseException | None, secret: str | None
) -> ProviderFailure:
    """The error for a connection that failed or was dropped (or could not be attempted), in a
    user's words: "could not reach the model at URL: connection refused" (never the HTTP
    library's class name and errno)."""
    if cause is not None and isinstance(cause, _UNSENDABLE_CAUSES):
        return unsendable_error(protocol, model, endpoint, cause, secret)
    where = redact(endpoint, [secret])
    return EndpointUnreachableError(
        f"{_where(protocol, model)}: could not reach the model at {where}: {no_answer(cause)}"
    )


_REASONS = (
    ("refused", "connection refused"),
    ("name or service not known", "the host name was not found"),
    ("nodename nor servname", "the host name was not found"),
    ("temporary failure in name resolution", "the host name was not found"),
    ("no route to host", "no route to the host"),
    ("network is unreachable", "the network is unreachable"),
    ("reset by peer", "the connection was reset"),
    ("timed out", "no answer in time"),
    ("disconnected", "the server closed the connection without an answer"),
    ("closed", "the server closed the connection without an answer"),
)


def no_answer(cause: BaseException | None) -> str:
    """Why a connection gave no answer, from an HTTP library's error and the errors it wraps."""
    chain: list[BaseException] = []
    while cause is not None and cause not in chain and len(chain) < 8:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(error, ConnectionRefusedError) for error in chain):
        return "connection refused"
    text = " ".join(str(error) for error in chain).lower()
    return next((said for cue, said in _REASONS if cue in text), "the connection failed or dropped")


def unsendable_error(
    protocol: str, model: str, endpoint: str, cause: BaseException, secret: str | None
) -> UnsendableRequestError:
    """The error for a request that could not be built (bad URL, non-ASCII key or header)."""
    where = f"{_where(protocol, model)}: cannot send a request to {redact(endpoint, [secret])}"
    if isinstance(cause, UnicodeEncodeError) and _in_body(cause):
        return UnsendableRequestError(
            f"{where} (its text is not valid UTF-8): the request was not sent"
        )
    if isinstance(cause, UnicodeEncodeError):  # its args hold the text it could not encode
        detail = "a header such as the API key is not ASCII"
    else:
        detail = one_line(redact(f"{type(cause).__name__}: {cause}", [secret]))
    return UnsendableRequestError(f"{where} ({detail}): check model.endpoint and the API key")


def _in_body(error: UnicodeEncodeError) -> bool:
    """Whether the text that failed is the request's JSON body (UTF-8), not a header (ASCII or
    Latin-1): lone surrogates, bytes that were never UTF-8, reaching the body."""
    return error.encoding.replace("-", "").lower() == "utf8"


def unusable_key_error(protocol: str, model: str) -> UnsendableRequestError:
    """The error for an API key no header can carry (not printable ASCII), sent nowhere."""
    return UnsendableRequestError(
        f"{_where(protocol, model)}: the API key is not printable ASCII without spaces, so it "
        "was not sent: check REVIEWFLOW_MODEL_API_KEY or model.api_key"
    )


def sdk_error(protocol: str, model: str, error: BaseException, secret: str | None) -> SdkError:
    """The error for any other SDK failure, with a redacted one-line detail."""
    detail = one_line(redact(f"{type(error).__name__}: {error}", [secret]))
    return SdkError(f"{_where(protocol, model)}: request failed ({detail})")


def missing_credentials_error(protocol: str, model: str, what: str) -> MissingCredentialsError:
    """The error for a platform whose credential chain found nothing (`what`: in user terms)."""
    return MissingCredentialsError(f"{_where(protocol, model)}: {one_line(what)}")


def empty_answer_error(
    protocol: str, model: str, what: str, usage: Usage | None = None
) -> EmptyAnswerError:
    """The error for a well-formed answer that holds nothing (e.g. empty choices)."""
    error = EmptyAnswerError(f"{_where(protocol, model)}: empty answer ({what})")
    return with_usage(error, usage)


def malformed_answer_error(protocol: str, model: str, endpoint: str) -> MalformedAnswerError:
    """The error for a 2xx answer that is not the protocol's response shape."""
    return MalformedAnswerError(
        f"{_where(protocol, model)}: the answer from {endpoint} is not a valid {protocol} response "
        "(check model.protocol and model.endpoint)"
    )
