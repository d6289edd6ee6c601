"""Anthropic Messages adapter, with prompt caching on the system block and the tools."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2

from reviewflow.config import ModelSettings, Platform
from reviewflow.errors import ProviderError
from reviewflow.providers import cloud, failures
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


AnyAnthropic = anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex
# Bedrock's own usage headers, read where the body's usage leaves a count out.
_BEDROCK_USAGE_HEADERS = {
    "input_tokens": "x-amzn-bedrock-input-token-count",
    "output_tokens": "x-amzn-bedrock-output-token-count",
    "cache_read_input_tokens": "x-amzn-bedrock-cache-read-input-token-count",
    "cache_creation_input_tokens": "x-amzn-bedrock-cache-write-input-token-count",
}


def create(settings: ModelSettings) -> AnthropicProvider:
    """The anthropic protocol's adapter (its spec: reviewflow.providers.protocols)."""
    if settings.platform == Platform.BEDROCK:
        return BedrockProvider(settings)
    if settings.platform == Platform.VERTEX:
        return VertexAnthropicProvider(settings)
    return AnthropicProvider(settings)


class AnthropicProvider(Provider[AnyAnthropic]):
    """Messages through the official `anthropic` SDK, SDK retries off."""

    protocol = "anthropic"

    def _new_client(self) -> AnyAnthropic:
        """A Messages client."""
        return anthropic.Anthropic(
            api_key=self._key,
            base_url=self._endpoint,
            timeout=self._timeout,
            max_retries=0,
            http_client=self._http_client(),
        )

    def _http_client(self) -> httpx2.Client:
        """As the SDK's own, with the shared TLS context."""
        return anthropic.DefaultHttpxClient(
            base_url=self._endpoint, timeout=self._timeout, verify=shared_tls_context()
        )

    def _create(self, client: AnyAnthropic, params: dict[str, Any]) -> Any:
        """The SDK call that sends the request (Bedrock's also reads its usage headers)."""
        return client.messages.create(**params)

    def _send(self, client: AnyAnthropic, request: ModelRequest) -> ModelResponse:
        """Send one Messages request and normalize the answer."""
        try:
            message = self._create(client, self._params(request))
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
                self.credential,
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


class BedrockProvider(AnthropicProvider):
    """Messages on Amazon Bedrock (`/model/{id}/invoke`): SigV4 through botocore's credential
    chain, or a Bedrock API key (`model.api_key`, AWS_BEARER_TOKEN_BEDROCK) as a bearer token."""

    credential = "AWS credentials or Bedrock API key"

    def _new_client(self) -> anthropic.AnthropicBedrock:
        return anthropic.AnthropicBedrock(
            aws_region=self._settings.region,
            api_key=self._key,
            base_url=self._endpoint,
            timeout=self._timeout,
            max_retries=0,
            http_client=self._http_client(),
        )

    def _create(self, client: AnyAnthropic, params: dict[str, Any]) -> Any:
        raw = client.messages.with_raw_response.create(**params)
        message = raw.parse()
        usage = getattr(message, "usage", None)
        for field, header in _BEDROCK_USAGE_HEADERS.items():
            value = raw.headers.get(header)
            if usage is not None and getattr(usage, field, None) is None and value:
                setattr(usage, field, int(value))
        return message

    def _send(self, client: AnyAnthropic, request: ModelRequest) -> ModelResponse:
        try:
            return super()._send(client, request)
        except cloud.aws_errors() as exc:
            failure = cloud.aws_failure("anthropic", self._model, exc)
            if failure is None:
                raise
            raise failure from None


class VertexAnthropicProvider(AnthropicProvider):
    """Messages on Vertex AI (`publishers/anthropic/models/{m}:rawPredict`), signed with
    Google's Application Default Credentials."""

    credential = "Google credentials"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self._google = cloud.GoogleCredentials("anthropic", self._model, settings.project)

    def _new_client(self) -> anthropic.AnthropicVertex:
        credentials, project = self._google.get()
        return anthropic.AnthropicVertex(
            region=self._settings.region or "",
            project_id=project,
            credentials=credentials,
            base_url=f"{self._endpoint}/v1",
            timeout=self._timeout,
            max_retries=0,
            http_client=self._http_client(),
        )

    def _sent_secrets(self) -> tuple[str, ...]:
        return self._google.tokens()

    def _send(self, client: AnyAnthropic, request: ModelRequest) -> ModelResponse:
        try:
            return super()._send(client, request)
        except cloud.google_auth_errors() as exc:
            raise cloud.google_auth_failure("anthropic", self._model, exc) from None
