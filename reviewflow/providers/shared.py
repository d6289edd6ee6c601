"""Small helpers the adapters share: argument parsing and stable synthetic call IDs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from reviewflow.providers.messages import ModelRequest, ToolCall

SYNTHETIC_ID_PREFIX = "rfcall_"
DEFAULT_MAX_OUTPUT_TOKENS = 8192


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Arguments text as a JSON object, or `({}, error)` when it is not one."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def object_call(
    call_id: str, name: str, arguments: object, signature: str | None = None
) -> ToolCall:
    """A ToolCall from arguments the SDK already decoded (Anthropic, Gemini)."""
    if isinstance(arguments, dict):
        raw = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return ToolCall(
            id=call_id, name=name, arguments=arguments, arguments_json=raw, signature=signature
        )
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    parsed, error = parse_arguments(raw)
    if error is None and not raw.strip():
        error = "arguments must be a JSON object, got an empty value"
    return ToolCall(
        id=call_id,
        name=name,
        arguments=parsed,
        arguments_json=raw,
        arguments_error=error,
        signature=signature,
    )


def conversation_digest(request: ModelRequest) -> str:
    """A short hash of the conversation a response answers."""
    data = json.dumps([m.model_dump(mode="json") for m in request.messages], sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def synthetic_call_id(digest: str, index: int, name: str) -> str:
    """A stable ID for a call the provider sent without one (same answer, same ID)."""
    seed = f"{digest}:{index}:{name}".encode()
    return SYNTHETIC_ID_PREFIX + hashlib.sha256(seed).hexdigest()[:16]


def is_synthetic(call_id: str) -> bool:
    """Whether reviewflow made this ID up (it must not be sent back to the provider)."""
    return call_id.startswith(SYNTHETIC_ID_PREFIX)
