"""Typed provider failures: one-line messages naming protocol, model and status, never the key."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from reviewflow.errors import PermanentProviderError, ProviderError, TransientProviderError

MAX_DETAIL = 240
REDACTED = "[REDACTED]"


class ProviderTimeoutError(TransientProviderError):
    """The request did not complete within the configured timeout."""


class EndpointUnreachableError(TransientProviderError):
    """The endpoint refused, dropped or never answered the connection."""


class ProviderAuthError(PermanentProviderError):
    """The API key was rejected (HTTP 401/403)."""


class ModelNotFoundError(PermanentProviderError):
    """The endpoint does not know the model (HTTP 404)."""


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret replaced, also as escaped (repr/JSON) or stripped text."""
    for secret in secrets:
        if not secret:
            continue
        forms = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1]}
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
    protocol: str, model: str, status: int, detail: str, secret: str | None
) -> ProviderError:
    """The typed error for an HTTP error status, with a redacted one-line detail."""
    text = one_line(redact(detail, [secret]))
    suffix = f": {text}" if text else ""
    base = f"{_where(protocol, model)}: HTTP {status}"
    if status in (401, 403):
        return ProviderAuthError(f"{base} (API key rejected){suffix}")
    if status == 404:
        return ModelNotFoundError(f"{base} (unknown model or wrong endpoint){suffix}")
    if status in (408, 429) or status >= 500:
        return TransientProviderError(f"{base}{suffix}")
    return PermanentProviderError(f"{base}{suffix}")


def timeout_error(protocol: str, model: str, timeout: float) -> ProviderTimeoutError:
    """The error for a request that exceeded the configured timeout."""
    return ProviderTimeoutError(f"{_where(protocol, model)}: no answer within {timeout:g}s")


def connection_error(
    protocol: str, model: str, endpoint: str, detail: str, secret: str | None
) -> EndpointUnreachableError:
    """The error for a connection that failed or was dropped."""
    text = one_line(redact(detail, [secret]))
    suffix = f" ({text})" if text else ""
    return EndpointUnreachableError(
        f"{_where(protocol, model)}: connection to {endpoint} failed{suffix}"
    )


def empty_answer_error(protocol: str, model: str, what: str) -> TransientProviderError:
    """The error for a well-formed answer that holds nothing (e.g. empty choices)."""
    return TransientProviderError(f"{_where(protocol, model)}: empty answer ({what})")


def malformed_answer_error(protocol: str, model: str, endpoint: str) -> PermanentProviderError:
    """The error for a 200 answer that is not the protocol's response shape."""
    return PermanentProviderError(
        f"{_where(protocol, model)}: the answer from {endpoint} is not a valid {protocol} response "
        "(check model.protocol and model.endpoint)"
    )
