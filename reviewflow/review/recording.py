"""Sending one model request and recording it, whatever its outcome."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reviewflow.errors import ProviderError
from reviewflow.providers.messages import ModelRequest, ModelResponse, Usage
from reviewflow.review.records import MAX_RECORDED_TEXT, RequestRecord, Send, Stage


@dataclass(frozen=True, slots=True)
class Where:
    """Which stage, file, chunk and round a request belongs to."""

    stage: Stage
    path: str | None
    chunk: int | None = None
    round: int | None = None


def bounded(text: str, limit: int = MAX_RECORDED_TEXT) -> str:
    """`text` cut to `limit` characters for a record, marked when cut."""
    return text if len(text) <= limit else text[:limit] + f"…[{len(text)} chars]"


def bounded_arguments(value: Any, limit: int = MAX_RECORDED_TEXT) -> Any:
    """Tool call arguments for a record: every text in them `bounded`, the shape kept."""
    if isinstance(value, str):
        return bounded(value, limit)
    if isinstance(value, dict):
        return {key: bounded_arguments(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [bounded_arguments(item, limit) for item in value]
    return value


def send_recorded(
    send: Send, request: ModelRequest, where: Where
) -> tuple[ModelResponse | None, RequestRecord]:
    """The answer (None when the provider failed) and the request's record."""
    from reviewflow.providers.failures import one_line, usage_of  # see `failure_status`

    started = datetime.now(UTC).isoformat(timespec="milliseconds")
    clock = time.monotonic()
    common = {
        "stage": where.stage,
        "path": where.path,
        "chunk": where.chunk,
        "round": where.round,
        "started_at": started,
    }
    try:
        response = send(request)
    except ProviderError as err:
        record = RequestRecord(
            **common,
            **failure_status(err),
            duration_ms=_elapsed(clock),
            usage=usage_of(err) or Usage(),
            error=one_line(str(err)),
        )
        return None, record
    record = RequestRecord(
        **common,
        attempts=response.attempts,
        duration_ms=_elapsed(clock),
        finish_reason=response.raw_finish_reason or response.finish_reason.value,
        usage=response.usage,
        text=bounded(response.text),
    )
    return response, record


def failure_status(error: ProviderError) -> dict[str, Any]:
    """A failed request's `attempts` and `status`: "not_sent" (no attempt) when the review's
    budget refused it, else "error" with the attempts that reached the endpoint (0 for a
    request that could not be built)."""
    # Imported here, not with the module: the prompts import this module (`bounded`), and the
    # cost estimate of `--preview` renders them without paying for the HTTP clients' import.
    from reviewflow.providers.failures import attempts_of, not_sent

    attempts = attempts_of(error)
    if not_sent(error):
        return {"attempts": attempts or 0, "status": "not_sent"}
    return {"attempts": 1 if attempts is None else attempts, "status": "error"}


def _elapsed(clock: float) -> int:
    return int((time.monotonic() - clock) * 1000)
