"""OpenAI Chat Completions adapter (also Ollama, vLLM, llama.cpp, DeepSeek, OpenRouter...)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from reviewflow.config import ModelSettings, Platform, protocol_spec
from reviewflow.config.platforms import AZURE_AD_TOKEN_ENV
from reviewflow.errors import ProviderError
from reviewflow.providers import failures
from reviewflow.providers.base import Provider
from reviewflow.providers.cloud import azure_errors, azure_failure, azure_token_provider
from reviewflow.providers.messages import (
    AssistantMessage,
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from reviewflow.providers.shared import (
    conversation_digest,
    parse_arguments,
    synthetic_call_id,
)
from reviewflow.providers.tls import shared_tls_context

NO_KEY = "no-key"  # local servers (Ollama, llama.cpp) accept any bearer token
# `chat.completions.create` first walks the request through the SDK's TypedDict transform (which
# renames and reformats typed inputs: ~1.6 ms per request here); ours is plain JSON built below,
# which that transform leaves as it is, so it is posted as is, with the same auth and parsing.
_CREATE = "/chat/completions"
_AUTH: openai.RequestOptions = {"security": {"bearer_auth": True}}
_FINISH = {
    "stop": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "length": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def create(settings: ModelSettings) -> OpenAIProvider:
    """The openai protocol's adapter (its spec: reviewflow.providers.protocols)."""
    if settings.platform == Platform.AZURE:
        return AzureOpenAIProvider(settings)
    return OpenAIProvider(settings)


class OpenAIProvider(Provider[openai.OpenAI]):  # AzureOpenAI is an OpenAI
    """Chat Completions through the official `openai` SDK, SDK retries off."""

    protocol = "openai"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self._official = self._endpoint == protocol_spec("openai").default_endpoint

    def _new_client(self) -> openai.OpenAI:
        """A Chat Completions client (local servers get a dummy bearer token)."""
        return openai.OpenAI(
            api_key=self._key or NO_KEY,
            base_url=self._endpoint,
            timeout=self._timeout,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(  # as the SDK's own, with the shared context
                base_url=self._endpoint, timeout=self._timeout, verify=shared_tls_context()
            ),
        )

    def _send(self, client: openai.OpenAI, request: ModelRequest) -> ModelResponse:
        """Send one Chat Completions request and normalize the answer."""
        try:
            completion = client.post(
                _CREATE, body=self._params(request), cast_to=ChatCompletion, options=_AUTH
            )
        except openai.APITimeoutError:
            raise failures.timeout_error("openai", self._model, self._timeout) from None
        except openai.APIConnectionError as exc:
            raise failures.connection_error(
                "openai", self._model, self._endpoint, _cause(exc), self._key
            ) from None
        except openai.APIStatusError as exc:
            raise failures.status_error(
                "openai",
                self._model,
                exc.status_code,
                failures.detail_from_body(exc.body),
                self._key,
                self.credential,
            ) from None
        except openai.APIResponseValidationError:
            raise self._malformed() from None
        except openai.OpenAIError as exc:
            raise failures.sdk_error("openai", self._model, exc, self._key) from None
        if not isinstance(getattr(completion, "choices", None), list):
            raise self._malformed()
        try:
            return self._normalize(completion, request)
        except (AttributeError, TypeError, ValueError):
            raise self._malformed() from None

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self._model,
            "messages": _messages(request),
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
            params["tool_choice"] = request.tool_choice.value
        if request.max_output_tokens is not None:
            key = "max_completion_tokens" if self._official else "max_tokens"
            params[key] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        return params

    def _normalize(self, completion: Any, request: ModelRequest) -> ModelResponse:
        if not completion.choices:
            usage = _usage(completion.usage)
            raise failures.empty_answer_error("openai", self._model, "no choices", usage)
        choice = completion.choices[0]
        message = choice.message
        digest = conversation_digest(request)
        calls = tuple(
            _tool_call(call, index, digest) for index, call in enumerate(message.tool_calls or [])
        )
        raw_finish = str(choice.finish_reason) if choice.finish_reason else None
        finish = _FINISH.get(raw_finish or "", FinishReason.OTHER)
        if calls and finish is FinishReason.STOP:
            finish = FinishReason.TOOL_CALLS  # some compatible servers say "stop"
        return ModelResponse(
            text=message.content or "",
            tool_calls=calls,
            finish_reason=finish,
            raw_finish_reason=raw_finish,
            usage=_usage(completion.usage),
            model=completion.model or self._model,
        )

    def _malformed(self) -> ProviderError:
        return failures.malformed_answer_error("openai", self._model, self._endpoint)


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    out.extend(_message(message) for message in request.messages)
    return out


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, AssistantMessage):
        empty = None if message.tool_calls else ""
        out: dict[str, Any] = {"role": "assistant", "content": message.content or empty}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
                for call in message.tool_calls
            ]
        return out
    return {"role": "user", "content": message.content}


def _tool_call(call: Any, index: int, digest: str) -> ToolCall:
    function = getattr(call, "function", None)
    name = str(getattr(function, "name", None) or getattr(call, "name", "") or "")
    raw = getattr(function, "arguments", None)
    if function is None:  # a custom (free-text) tool call: not one of ours
        raw = getattr(call, "input", None)
    raw_text = raw if isinstance(raw, str) else ""
    arguments, error = parse_arguments(raw_text)
    call_id = getattr(call, "id", None) or synthetic_call_id(digest, index, name)
    return ToolCall(
        id=call_id,
        name=name,
        arguments=arguments,
        arguments_json=raw_text or "{}",
        arguments_error=error,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage.reported(
        prompt=usage.prompt_tokens,
        completion=usage.completion_tokens,
        total=usage.total_tokens,
        cache_read=getattr(details, "cached_tokens", None),
        cache_write=getattr(details, "cache_write_tokens", None),
    )


def _cause(exc: BaseException) -> BaseException | None:
    return exc.__cause__ or exc.__context__


class AzureOpenAIProvider(OpenAIProvider):
    """Chat Completions on Azure OpenAI (`/openai/deployments/{d}/chat/completions`, with
    `api-version`): the key (`model.api_key`, AZURE_OPENAI_API_KEY) in the `api-key` header,
    else the openai SDK's Entra ID token variable (AZURE_OPENAI_AD_TOKEN), else a token from
    azure-identity's default chain (the `azure` extra), got when a request is sent."""

    credential = "API key or Entra ID token"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self._official = True  # Azure takes max_completion_tokens (o-series models need it)
        self._entra_token: str | None = None  # the last one sent, redacted from errors
        self._lock = threading.Lock()
        self._chain: Callable[[], str] | None = None  # one credential (and cache) for all clients

    def _sent_secrets(self) -> tuple[str, ...]:
        return (self._entra_token,) if self._entra_token else ()

    def _new_client(self) -> openai.OpenAI:
        provider: Callable[[], str] | None = None
        if self._key is None:  # read as the SDK would, to be redacted from errors too
            self._entra_token = os.environ.get(AZURE_AD_TOKEN_ENV) or None
            provider = None if self._entra_token else self._token_provider()
        return openai.AzureOpenAI(
            azure_ad_token=self._entra_token,
            azure_ad_token_provider=provider,
            azure_endpoint=self._endpoint,
            azure_deployment=self._settings.effective_deployment,
            api_version=self._settings.effective_api_version,
            api_key=self._key,
            timeout=self._timeout,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(
                base_url=self._endpoint, timeout=self._timeout, verify=shared_tls_context()
            ),
        )

    def _token_provider(self) -> Callable[[], str]:
        """The default chain's token provider, made once; each token it gives is kept to be
        redacted from errors."""
        with self._lock:
            if self._chain is None:
                chain = azure_token_provider()

                def token() -> str:
                    self._entra_token = chain()
                    return self._entra_token

                self._chain = token
            return self._chain

    def _send(self, client: openai.OpenAI, request: ModelRequest) -> ModelResponse:
        if self._chain is None:  # a key or a ready-made token: azure-identity not in play
            return super()._send(client, request)
        try:
            return super()._send(client, request)
        except azure_errors():  # the default chain found no credential, or its sign-in failed
            raise azure_failure("openai", self._model) from None
