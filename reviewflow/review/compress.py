"""Context compression (000 §8): older completed rounds summarized in a tool-free request.

The first user message stays; the newest two complete rounds stay intact with their tool-call
IDs; what lies between comes back summarized as a `<previous_review_summary>` user message.
A failed, empty or non-shrinking summary keeps the original messages; the caller then turns
compression off for the session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reviewflow.providers.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolChoice,
    ToolResultMessage,
    UserMessage,
)
from reviewflow.review import templates
from reviewflow.review.recording import Where, send_recorded
from reviewflow.review.records import RequestRecord, Send
from reviewflow.review.tokens import estimate_request, estimate_tokens

TRIGGER_SHARE = 0.6
KEEP_ROUNDS = 2
LARGE_RESULT_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class Compression:
    """The outcome of one attempt: new messages (None: keep the old ones) and its record."""

    messages: tuple[Message, ...] | None
    record: RequestRecord
    problem: str | None = None


def round_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes of the assistant messages that open a complete tool round."""
    starts = []
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and message.tool_calls:
            answered = {
                m.tool_call_id
                for m in messages[index + 1 : index + 1 + len(message.tool_calls)]
                if isinstance(m, ToolResultMessage)
            }
            if answered == {call.id for call in message.tool_calls}:
                starts.append(index)
    return starts


def split_point(messages: Sequence[Message], max_chunk_tokens: int) -> int | None:
    """Where the kept tail begins, or None when there is nothing worth summarizing.

    Normally the tail is the newest two rounds and at least one older round exists; an
    unusually large tool result allows summarizing every completed round earlier.
    """
    starts = round_starts(messages)
    if len(starts) > KEEP_ROUNDS:
        return starts[-KEEP_ROUNDS]
    large = LARGE_RESULT_SHARE * max_chunk_tokens
    if any(
        isinstance(m, ToolResultMessage) and estimate_tokens(m.content) > large for m in messages
    ):
        return len(messages) if starts else None
    return None


def compress(messages: tuple[Message, ...], split: int, send: Send, where: Where) -> Compression:
    """Summarize `messages[1:split]`; keep the first message and `messages[split:]`."""
    rounds = json.dumps(_structured(messages[1:split]), ensure_ascii=False, indent=None)
    request = ModelRequest(
        system=templates.system("compress"),
        messages=(UserMessage(content=templates.compress_user(rounds)),),
        tool_choice=ToolChoice.AUTO,
    )
    response, record = send_recorded(send, request, where)
    if response is None:
        return Compression(None, record, f"compression request failed: {record.error}")
    text = response.text.strip()
    if not text:
        return Compression(None, record, "compression returned an empty summary")
    summary = UserMessage(content=templates.summary(text))
    compressed = (messages[0], summary, *messages[split:])
    if _size(compressed) >= _size(messages):
        return Compression(None, record, "compression did not shrink the conversation")
    return Compression(compressed, record)


def _size(messages: Sequence[Message]) -> int:
    return estimate_request(ModelRequest(messages=tuple(messages)))


def _structured(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The messages as compact JSON-ready items: notes, and calls with their results."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            items.append({"note": message.content})
        elif isinstance(message, AssistantMessage):
            item: dict[str, Any] = {"assistant": message.content} if message.content else {}
            calls = message.tool_calls
            item["calls"] = [_call(c.name, c.arguments, results.get(c.id)) for c in calls]
            items.append(item)
    return items


def _call(name: str, arguments: dict[str, Any], result: ToolResultMessage | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tool": name, "arguments": arguments}
    if result is not None:
        out["error" if result.is_error else "result"] = result.content
    return out
