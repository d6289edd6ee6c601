"""What the model stages record and return: per-request records and per-stage results.

These are the contract between the engine (`reviewflow.review`), the findings stages, the
tasks that cache them (JSON: every record here round-trips through `model_dump_json`) and the
report's `process` section. No record ever holds the API key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from reviewflow.models import Candidate, ReviewWarning
from reviewflow.providers.messages import ModelRequest, ModelResponse, Usage

Send = Callable[[ModelRequest], ModelResponse]
"""Sends one model request. In the flow it is `tasks.llm.llm_request` (a transient error retried);
in tests and plain runs, `ProviderPool.complete`. Raises `ProviderError` (a
`ProviderFailure` carries the attempts it took and any usage its rejected answer reported)."""

ResultT = TypeVar("ResultT")

Stage = Literal[
    "plan",
    "main",
    "compress",
    "relocate",
    "filter",
    "localize",
    "verify_questions",
    "verify_answer",
    "verify_score",
]

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

    `attempts` is 1 + retries (`tasks.llm.llm_request`); `status` "error" carries the one-line
    error; "not_sent": the review's budget refused the request (no attempt, no usage; `error`
    says why).
    """

    stage: Stage
    path: str | None = None
    chunk: int | None = None
    round: int | None = None
    attempts: int = 1
    status: Literal["ok", "error", "not_sent"] = "ok"
    started_at: str = ""
    duration_ms: int = 0
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    text: str = ""
    error: str | None = None
    tool_calls: tuple[ToolRecord, ...] = ()
    reused: bool = False
    """The answer came from the cache of an earlier run: this run neither sent nor paid it."""
    model: str | None = None
    """The name of the model asked (`attributed`: its stage's), each priced at its own price;
    None in a record made before models were named (the review's `model.*`)."""


class StageResult(_Record):
    """Common part of every stage's result: complete or not, why, and what it cost."""

    path: str | None = None
    complete: bool = True
    warnings: tuple[ReviewWarning, ...] = ()
    records: tuple[RequestRecord, ...] = ()

    def cache_identity(self) -> dict[str, Any]:
        """The result as a later stage's input: whether its answers were reused is no input."""
        return self.model_dump(mode="json", exclude={"records": {"__all__": {"reused", "model"}}})


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
    """This run's summed usage and number of request attempts (every attempt counts; answers
    reused from the cache cost nothing and are not counted)."""
    usage = Usage()
    requests = 0
    for record in records:
        if not record.reused:
            usage = usage + record.usage
            requests += record.attempts
    return usage, requests


def attributed(result: ResultT, model: str) -> ResultT:
    """A stage result (or list of them) whose records name `model`, the model its stage asked
    (a record that names one already keeps it)."""
    if isinstance(result, list):
        return cast(ResultT, [attributed(item, model) for item in result])
    found = getattr(result, "records", None)  # StageResult, Verification and Localized
    if isinstance(result, BaseModel) and isinstance(found, tuple):
        named = tuple(r if r.model else r.model_copy(update={"model": model}) for r in found)
        return cast(ResultT, result.model_copy(update={"records": named}))
    return result


def mark_reused(result: ResultT) -> ResultT:
    """A stage result (or list of them) taken from the cache: its records marked `reused`."""
    if isinstance(result, list):
        return cast(ResultT, [mark_reused(item) for item in result])
    found = getattr(result, "records", None)  # StageResult, and Localized
    if isinstance(result, BaseModel) and isinstance(found, tuple):
        marked = tuple(r.model_copy(update={"reused": True}) for r in found)
        return cast(ResultT, result.model_copy(update={"records": marked}))
    return result
