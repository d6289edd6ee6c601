"""The normalized model protocol: one request/response shape for every provider.

Plain data only; the `Provider` interface that sends these lives in `base.py`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolChoice(StrEnum):
    """Whether the model may, must or must not call a tool."""

    AUTO = "auto"
    REQUIRED = "required"
    NONE = "none"


RequireTool = ToolChoice.REQUIRED
"""The marker forcing a tool call (`required` / `any` / `ANY` on the wire)."""


class FinishReason(StrEnum):
    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


class ToolDefinition(_Frozen):
    """A tool the model may call: its name, what it does and its JSON Schema parameters."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(_Frozen):
    """One native tool call proposed by the model.

    `arguments_error` is set (and `arguments` empty) when the model sent arguments that are
    not a JSON object, so the tool loop can answer with an error instead of crashing.
    `signature` is opaque provider state that must travel back with the call (Gemini's
    thought signature, base64).
    """

    id: str = Field(min_length=1)
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    arguments_json: str = "{}"
    arguments_error: str | None = None
    signature: str | None = None


class UserMessage(_Frozen):
    role: Literal["user"] = "user"
    content: str


class AssistantMessage(_Frozen):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ToolResultMessage(_Frozen):
    """The result of one tool call, matched to it by `tool_call_id` (and `name`)."""

    role: Literal["tool"] = "tool"
    tool_call_id: str = Field(min_length=1)
    name: str
    content: str
    is_error: bool = False


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


class ModelRequest(_Frozen):
    """One model request: system text, the whole conversation so far, tools and tool choice."""

    system: str = ""
    messages: tuple[Message, ...] = Field(min_length=1)
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice = ToolChoice.AUTO
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)

    @model_validator(mode="after")
    def _check_tools(self) -> ModelRequest:
        if self.tool_choice is ToolChoice.REQUIRED and not self.tools:
            raise ValueError("tool_choice 'required' needs at least one tool")
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique")
        return self


def readable(request: ModelRequest) -> ModelRequest:
    """`request` as a JSON body can carry it: text holding bytes that were not UTF-8 (a file
    name's, kept as surrogates so Git can be given it back) shows them as `\\xNN`, the form the
    reports use and the tools read back."""
    data = request.model_dump()
    clean = _readable(data)
    return request if clean == data else ModelRequest.model_validate(clean)


def _readable(value: Any) -> Any:
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            try:
                raw = value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a surrogate no byte was kept as
                return value.encode("utf-8", "backslashreplace").decode("utf-8")
            return raw.decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, dict):
        return {_readable(key): _readable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_readable(item) for item in value)
    return value


class Usage(_Frozen):
    """Token counts reported by the provider; prompt includes cached tokens."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def reported(
        cls,
        prompt: int | None,
        completion: int | None,
        total: int | None = None,
        cache_read: int | None = None,
        cache_write: int | None = None,
    ) -> Usage:
        """Usage from provider fields that may be missing; total falls back to the sum."""
        prompt_n, completion_n = prompt or 0, completion or 0
        return cls(
            prompt_tokens=prompt_n,
            completion_tokens=completion_n,
            total_tokens=total or prompt_n + completion_n,
            cache_read_tokens=cache_read or 0,
            cache_write_tokens=cache_write or 0,
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class ModelResponse(_Frozen):
    """What the model answered: text, native tool calls, why it stopped, and usage.

    `attempts` is how many request attempts it took (1 + retries, as `llm_request` counts
    them); a flow totals its requests from these, in whatever process each task ran.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = FinishReason.STOP
    raw_finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    attempts: int = Field(default=1, ge=1)

    def assistant_message(self) -> AssistantMessage:
        """The assistant turn to append to the conversation for the next round."""
        return AssistantMessage(content=self.text, tool_calls=self.tool_calls)
