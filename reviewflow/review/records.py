"""What the model stages record and return: per-request records and per-stage results.

These are the contract between the engine (`reviewflow.review`), the findings stages, the
tasks that cache them (JSON: every record here round-trips through `model_dump_json`) and the
report's `process` section. No record ever holds the API key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reviewflow.models import Candidate, ReviewWarning
from reviewflow.providers.messages import ModelRequest, ModelResponse, Usage

Send = Callable[[ModelRequest], ModelResponse]
"""Sends one model request. In the flow it is the `llm_request` task (retried by Prefect);
in tests and plain runs, `ProviderPool.complete`. Raises `ProviderError` (a
`ProviderFailure` carries the attempts it took and any usage its rejected answer reported)."""

Stage = Literal["plan", "main", "compress", "relocate", "filter", "localize"]

MAX_RECORDED_TEXT = 4096
"""Bound on raw model text and tool output kept in a record."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolRecord(_Record):
    """One tool call the model made and what it got back (output bounded)."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: Literal["ok", "error", "cached"] = "ok"
    output: str = ""
    duration_ms: int = 0


class RequestRecord(_Record):
    """One model request of any stage: its outcome, timing, usage and tool calls.

    `attempts` is 1 + Prefect retries; `status` "error" carries the one-line error.
    """

    stage: Stage
    path: str | None = None
    chunk: int | None = None
    round: int | None = None
    attempts: int = 1
    status: Literal["ok", "error"] = "ok"
    started_at: str = ""
    duration_ms: int = 0
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    text: str = ""
    error: str | None = None
    tool_calls: tuple[ToolRecord, ...] = ()


class StageResult(_Record):
    """Common part of every stage's result: complete or not, why, and what it cost."""

    path: str | None = None
    complete: bool = True
    warnings: tuple[ReviewWarning, ...] = ()
    records: tuple[RequestRecord, ...] = ()


class PlanResult(StageResult):
    """A file's tool-free plan: guidance for its main requests (None when not planned)."""

    guidance: str | None = None


class ChunkResult(StageResult):
    """One tool-loop session over one chunk of a file's hunks."""

    chunk: int = 0
    chunks: int = 1
    candidates: tuple[Candidate, ...] = ()
    tool_calls: int = 0


def total_usage(records: Iterable[RequestRecord]) -> tuple[Usage, int]:
    """Summed usage and the number of request attempts (every attempt counts)."""
    usage = Usage()
    requests = 0
    for record in records:
        usage = usage + record.usage
        requests += record.attempts
    return usage, requests
