"""Anthropic Messages adapter, with prompt caching on the system block and the tools."""

from __future__ import annotations

from typing import Any

import anthropic

from reviewflow.config import Protocol
from reviewflow.errors import ProviderError
from reviewflow.providers import failures
from reviewflow.providers.base import Provider
from reviewflow.providers.messages import (
    AssistantMessage,
    FinishReason,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    Usage,
)
from reviewflow.providers.shared import DEFAULT_MAX_OUTPUT_TOKENS, object_call
from reviewflow.providers.tls import shared_tls_context

EPHEMERAL = {"type": "ephemeral"}
_TOOL_CHOICE = {
    ToolChoice.AUTO: {"type": "auto"},
    ToolChoice.REQUIRED: {"type": "any"},
    ToolChoice.NONE: {"type": "none"},
}
_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.CONTENT_FILTER,
}


class AnthropicProvider(Provider[anthropic.Anthropic]):
    """Messages through the official `anthropic` SDK, SDK retries off."""

    protocol = Protocol.ANTHROPIC

    def _new_client(self) -> anthropic.Anthropic:
        """A Messages client."""
        return anthropic.Anthropic(
            api_key=self._key,
            base_url=self._endpoint,
            timeout=self._timeout,
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(  # as the SDK's own, with the shared context
                base_url=self._endpoint, timeout=self._timeout, verify=shared_tls_context()
            ),
        )

    def _send(self, client: anthropic.Anthropic, request: ModelRequest) -> ModelResponse:
        """Send one Messages request and normalize the answer."""
        try:
            message = client.messages.create(**self._params(request))
        except anthropic.APITimeoutError:
            raise failures.timeout_error("anthropic", self._model, self._timeout) from None
        except anthropic.APIConnectionError as exc:
            raise failures.connection_error(
                "anthropic",
                self._model,
                self._endpoint,
                exc.__cause__ or exc.__context__,
                self._key,
            ) from None
        except anthropic.APIStatusError as exc:
            raise failures.status_error(
                "anthropic",
                self._model,
                exc.status_code,
                failures.detail_from_body(exc.body),
                self._key,
            ) from None
        except anthropic.APIResponseValidationError:
            raise self._malformed() from None
        except anthropic.AnthropicError as exc:
            raise failures.sdk_error("anthropic", self._model, exc, self._key) from None
        if getattr(message, "type", None) != "message":
            raise self._malformed()
        try:
            return self._normalize(message)
        except (AttributeError, TypeError, ValueError):
            raise self._malformed() from None

    def _malformed(self) -> ProviderError:
        return failures.malformed_answer_error("anthropic", self._model, self._endpoint)

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS,
            "messages": _messages(request),
        }
        if request.system:
            params["system"] = [
                {"type": "text", "text": request.system, "cache_control": EPHEMERAL}
            ]
        if request.tools:
            tools: list[dict[str, Any]] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
            tools[-1]["cache_control"] = EPHEMERAL
            params["tools"] = tools
            params["tool_choice"] = _TOOL_CHOICE[request.tool_choice]
        if request.temperature is not None:
            params["temperature"] = request.temperature
        return params

    def _normalize(self, message: Any) -> ModelResponse:
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in message.content or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                calls.append(object_call(block.id, block.name, block.input))
        raw_finish = str(message.stop_reason) if message.stop_reason else None
        finish = _FINISH.get(raw_finish or "", FinishReason.OTHER)
        if calls and finish is FinishReason.STOP:
            finish = FinishReason.TOOL_CALLS
        return ModelResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            finish_reason=finish,
            raw_finish_reason=raw_finish,
            usage=_usage(message.usage),
            model=getattr(message, "model", None) or self._model,
        )


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Messages API turns: tool results and user text that follow them share one user turn."""
    out: list[dict[str, Any]] = []
    for message in request.messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Any) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, ToolResultMessage):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        blocks.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        )
        return "assistant", blocks
    return "user", [{"type": "text", "text": message.content}] if message.content else []


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    write = getattr(usage, "cache_creation_input_tokens", None) or 0
    prompt = (usage.input_tokens or 0) + read + write
    return Usage.reported(
        prompt=prompt, completion=usage.output_tokens, cache_read=read, cache_write=write
    )
