"""Model providers: one normalized protocol over the official OpenAI, Anthropic and Gemini SDKs.

The names below are loaded on first use (PEP 562): importing `reviewflow.providers.messages`
(the request and response types, which the cost estimate of `--preview` needs) does not pay
for the SDKs and the HTTP clients behind the pool.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reviewflow.providers.base import Provider
    from reviewflow.providers.factory import check_settings, create_provider
    from reviewflow.providers.messages import (
        AssistantMessage,
        FinishReason,
        Message,
        ModelRequest,
        ModelResponse,
        RequireTool,
        ToolCall,
        ToolChoice,
        ToolDefinition,
        ToolResultMessage,
        Usage,
        UserMessage,
    )
    from reviewflow.providers.pool import ProviderHandle, ProviderPool, UsageTotals, pool_for
    from reviewflow.providers.registry import PoolRegistry

_HOMES = {
    "Provider": "base",
    "check_settings": "factory",
    "create_provider": "factory",
    **dict.fromkeys(
        (
            "AssistantMessage",
            "FinishReason",
            "Message",
            "ModelRequest",
            "ModelResponse",
            "RequireTool",
            "ToolCall",
            "ToolChoice",
            "ToolDefinition",
            "ToolResultMessage",
            "Usage",
            "UserMessage",
        ),
        "messages",
    ),
    **dict.fromkeys(("ProviderHandle", "ProviderPool", "UsageTotals", "pool_for"), "pool"),
    "PoolRegistry": "registry",
}

__all__ = [
    "AssistantMessage",
    "FinishReason",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "PoolRegistry",
    "Provider",
    "ProviderHandle",
    "ProviderPool",
    "RequireTool",
    "ToolCall",
    "ToolChoice",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UsageTotals",
    "UserMessage",
    "check_settings",
    "create_provider",
    "pool_for",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
