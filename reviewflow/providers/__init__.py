"""Model providers: one normalized protocol over the official OpenAI, Anthropic and Gemini SDKs."""

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

__all__ = [
    "AssistantMessage",
    "FinishReason",
    "Message",
    "ModelRequest",
    "ModelResponse",
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
