"""Tool-free requests of the findings stages: send, parse the JSON answer, one strict retry.

Answers are JSON: a bare array, or an object holding the array under one of a small set of
wrapper keys (optionally inside one Markdown code fence). Nothing else is repaired.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from reviewflow.errors import ProviderError
from reviewflow.models import ReviewWarning
from reviewflow.prompts import render
from reviewflow.providers.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    Usage,
    UserMessage,
)
from reviewflow.review.recording import failure_status
from reviewflow.review.records import MAX_RECORDED_TEXT, RequestRecord, Send, Stage

PROMPTS = Path(__file__).parent / "prompts"
COMMON_WRAPPERS = ("items", "results", "data")

T = TypeVar("T")


def listing_prompts(stage: str, form: str, path: str, diff: str, listing: str) -> tuple[str, str]:
    """The system and user prompts of a tool-free stage over one file's diff and a listing of
    its candidates (`relocate`, `filter`): `<stage>_system.j2` and `<stage>_user.j2`."""
    system = render(PROMPTS, f"{stage}_system.j2", form=form)
    user = render(PROMPTS, f"{stage}_user.j2", path=path, diff=diff, candidates=listing)
    return system, user


class AnswerError(ValueError):
    """A model answer that is not the JSON its stage asked for (the message says why)."""


def parse_array(text: str, wrappers: Sequence[str]) -> list[Any]:
    """The JSON array in `text`: bare, or under one wrapper key (stage's own or common)."""
    data = parse_json(text)
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        keys = [key for key in (*wrappers, *COMMON_WRAPPERS) if isinstance(data.get(key), list)]
        if len(keys) == 1:
            return list(data[keys[0]])
    accepted = ", ".join(f'{{"{key}": [...]}}' for key in wrappers)
    raise AnswerError(f"the answer is not a JSON array (or {accepted})")


def parse_json(text: str) -> Any:
    """The JSON value of an answer (optionally inside one Markdown code fence)."""
    try:
        return json.loads(_unfenced(text.strip()))
    except json.JSONDecodeError as exc:
        raise AnswerError(f"the answer is not JSON ({exc.msg})") from None


def _unfenced(body: str) -> str:
    """The inside of one ``` fence around the whole answer (with or without a language tag)."""
    if body.startswith("```") and body.endswith("```") and "\n" in body:
        return body[body.index("\n") + 1 : -3].strip()
    return body


def text_field(item: dict[str, Any], key: str) -> str | None:
    """`item[key]` if it is a string, None if absent; AnswerError for any other value."""
    value = item.get(key)
    if value is None or isinstance(value, str):
        return value
    raise AnswerError(f'"{key}" of {item.get("id")!r} is not a string')


@dataclass(frozen=True, slots=True)
class Asked(Generic[T]):
    """The parsed answer of a tool-free stage (None: failed), its records and any warning."""

    value: T | None
    records: tuple[RequestRecord, ...]
    warnings: tuple[ReviewWarning, ...] = ()


@dataclass(frozen=True, slots=True)
class Question:
    """One tool-free request: who asks, the prompts, and how to read the answer."""

    stage: Stage
    path: str | None
    system: str
    user: str
    answer_format: str  # shown in the strict retry
    warning_code: str
    what: str  # "review filter for src/app.py", for the warning


def ask(question: Question, parse: Callable[[str], T], send: Send) -> Asked[T]:
    """Send `question`; on an unusable answer, retry once asking for strict formatting."""
    from reviewflow.providers.failures import one_line  # as in `review.recording`

    messages: list[Message] = [UserMessage(content=question.user)]
    records: list[RequestRecord] = []
    problem = ""
    for _ in range(2):
        request = ModelRequest(system=question.system, messages=tuple(messages))
        started, clock = _now(), time.monotonic()
        try:
            response = send(request)
        except ProviderError as exc:
            records.append(_failed(question, started, clock, exc))
            return Asked(None, tuple(records), (_warning(question, one_line(str(exc))),))
        try:
            value = parse(response.text)
        except AnswerError as exc:
            problem = str(exc)
            records.append(_record(question, started, clock, response, problem))
            strict = render(
                PROMPTS, "strict_retry.j2", problem=problem, form=question.answer_format
            )
            messages += [AssistantMessage(content=response.text), UserMessage(content=strict)]
            continue
        records.append(_record(question, started, clock, response, None))
        return Asked(value, tuple(records))
    why = f"unusable answer twice ({problem})"
    return Asked(None, tuple(records), (_warning(question, why),))


def _warning(question: Question, why: str) -> ReviewWarning:
    return ReviewWarning(
        code=question.warning_code,
        message=f"{question.what} failed: {why}; review incomplete",
        path=question.path,
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _elapsed_ms(clock: float) -> int:
    return int((time.monotonic() - clock) * 1000)


def _record(
    question: Question, started: str, clock: float, response: ModelResponse, problem: str | None
) -> RequestRecord:
    return RequestRecord(
        stage=question.stage,
        path=question.path,
        attempts=response.attempts,
        status="error" if problem else "ok",
        started_at=started,
        duration_ms=_elapsed_ms(clock),
        finish_reason=response.finish_reason.value,
        usage=response.usage,
        text=response.text[:MAX_RECORDED_TEXT],
        error=problem,
    )


def _failed(question: Question, started: str, clock: float, exc: ProviderError) -> RequestRecord:
    from reviewflow.providers.failures import one_line, usage_of  # as in `review.recording`

    return RequestRecord(
        stage=question.stage,
        path=question.path,
        **failure_status(exc),
        started_at=started,
        duration_ms=_elapsed_ms(clock),
        usage=usage_of(exc) or Usage(),
        error=one_line(str(exc)),
    )
