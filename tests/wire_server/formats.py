"""Each protocol's wire format: successful answers and error bodies, as the real APIs send them."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from tests.wire_server.replies import (
    AUTO_ID,
    Call,
    Empty,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    Text,
    ToolCalls,
    WireUsage,
)


def render(record: RecordedRequest, reply: Reply, n: int) -> tuple[int, Any]:
    """(status, body) answering `record` with `reply`; a `bytes` body is sent verbatim."""
    if isinstance(reply, Raw):
        body = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
        return reply.status, body
    if isinstance(reply, HttpError):
        body = reply.body
        if body is None:
            body = error_body(record, reply.status, f"wire error {reply.status}")
        return reply.status, body
    answer = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini}[record.protocol]
    return 200, answer(record, reply, n)


def _calls_of(reply: Reply) -> Sequence[Call]:
    return reply.calls if isinstance(reply, ToolCalls) else ()


def _text_of(reply: Reply) -> str:
    return reply.text if isinstance(reply, ToolCalls | Text) else ""


def _usage_of(reply: Reply) -> WireUsage:
    return reply.usage if isinstance(reply, ToolCalls | Text | Empty) else WireUsage()


def _arguments_text(call: Call) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(call: Call, prefix: str, n: int, index: int) -> str | None:
    return f"{prefix}{n}_{index}" if call.id is AUTO_ID else call.id


def _openai(record: RecordedRequest, reply: Reply, n: int) -> dict[str, Any]:
    usage = _usage_of(reply)
    calls = _calls_of(reply)
    message: dict[str, Any] = {"role": "assistant", "content": _text_of(reply) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call, "call_", n, i),
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call)},
            }
            for i, call in enumerate(calls)
        ]
    choices = [
        {
            "index": 0,
            "message": message,
            "finish_reason": "tool_calls" if calls else "stop",
            "logprobs": None,
        }
    ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": record.model,
        "choices": [] if isinstance(reply, Empty) else choices,
        "usage": {
            "prompt_tokens": usage.prompt,
            "completion_tokens": usage.completion,
            "total_tokens": usage.total or usage.prompt + usage.completion,
            "prompt_tokens_details": {
                "cached_tokens": usage.cache_read,
                "cache_write_tokens": usage.cache_write,
            },
        },
    }


def _anthropic(record: RecordedRequest, reply: Reply, n: int) -> dict[str, Any]:
    usage = _usage_of(reply)
    calls = _calls_of(reply)
    content: list[dict[str, Any]] = []
    if _text_of(reply):
        content.append({"type": "text", "text": _text_of(reply)})
    for i, call in enumerate(calls):
        arguments = call.arguments
        content.append(
            {
                "type": "tool_use",
                "id": _call_id(call, "toolu_", n, i),
                "name": call.name,
                "input": arguments,
            }
        )
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": record.model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage.prompt,
            "output_tokens": usage.completion,
            "cache_read_input_tokens": usage.cache_read,
            "cache_creation_input_tokens": usage.cache_write,
        },
    }


def _gemini(record: RecordedRequest, reply: Reply, n: int) -> dict[str, Any]:
    usage = _usage_of(reply)
    parts: list[dict[str, Any]] = []
    if _text_of(reply):
        parts.append({"text": _text_of(reply)})
    finish = "STOP"
    for i, call in enumerate(_calls_of(reply)):
        if isinstance(call.arguments, str):  # Gemini reports malformed calls, never sends them
            finish = "MALFORMED_FUNCTION_CALL"
            continue
        function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
        call_id = _call_id(call, "fc_", n, i)
        if call_id is not None:
            function_call["id"] = call_id
        part: dict[str, Any] = {"functionCall": function_call}
        if call.signature:
            part["thoughtSignature"] = call.signature
        parts.append(part)
    candidate: dict[str, Any] = {"index": 0, "finishReason": finish}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    return {
        "candidates": [] if isinstance(reply, Empty) else [candidate],
        "usageMetadata": {
            "promptTokenCount": usage.prompt,
            "candidatesTokenCount": usage.completion,
            "totalTokenCount": usage.total or usage.prompt + usage.completion,
            "cachedContentTokenCount": usage.cache_read,
        },
        "modelVersion": record.model,
        "responseId": f"resp-{n}",
    }


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_ANTHROPIC_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(record: RecordedRequest, status: int, message: str) -> dict[str, Any]:
    text = f"{message}; credential received: {record.credential!r}"
    if record.platform == "bedrock":  # AWS's shape; the kind is in x-amzn-errortype
        return {"message": text}
    if record.platform == "vertex" or record.protocol == "gemini":  # Google's front end
        state = _GEMINI_STATUS.get(status, "UNKNOWN")
        return {"error": {"code": status, "message": text, "status": state}}
    if record.platform == "azure" and status == 404:
        return {"error": {"code": "DeploymentNotFound", "message": text}}
    if record.protocol == "anthropic":
        kind = _ANTHROPIC_TYPE.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": text}}
    code = "invalid_api_key" if status == 401 else None
    return {
        "error": {"message": text, "type": "invalid_request_error", "param": None, "code": code}
    }
