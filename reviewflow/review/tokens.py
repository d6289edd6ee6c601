"""A local token estimate: about four characters per token. Provider usage stays authoritative."""

from __future__ import annotations

from reviewflow.providers.messages import AssistantMessage, ModelRequest, ToolResultMessage

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Approximate tokens of `text` (rounded up)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_request(request: ModelRequest) -> int:
    """Approximate prompt tokens of a request: system, messages and tool definitions."""
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.content)
        if isinstance(message, AssistantMessage):
            chars += sum(len(call.name) + len(call.arguments_json) for call in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            chars += len(message.tool_call_id)
    for tool in request.tools:
        chars += len(tool.model_dump_json())
    return -(-chars // CHARS_PER_TOKEN)
