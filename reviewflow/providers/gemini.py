"""Gemini generateContent adapter on google-genai, with function declarations."""

from __future__ import annotations

import base64
from typing import Any, NoReturn

import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
from reviewflow.providers.shared import (
    conversation_digest,
    is_synthetic,
    object_call,
    synthetic_call_id,
)
from reviewflow.providers.tls import shared_tls_context


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeout, transport) exception classes of whichever httpx flavour genai uses."""
    timeouts: list[type[BaseException]] = []
    transports: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transports.append(module.TransportError)
    return tuple(timeouts), tuple(transports)


_TIMEOUTS, _TRANSPORT = _transport_errors()
_MODE = {
    ToolChoice.AUTO: types.FunctionCallingConfigMode.AUTO,
    ToolChoice.REQUIRED: types.FunctionCallingConfigMode.ANY,
    ToolChoice.NONE: types.FunctionCallingConfigMode.NONE,
}
_FILTERED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
_KEY_REJECTED = ("API_KEY_INVALID", "API key not valid", "API key expired")


def create(settings: ModelSettings) -> GeminiProvider:
    """The gemini protocol's adapter (its spec: reviewflow.providers.protocols)."""
    return GeminiProvider(settings)


class GeminiProvider(Provider[genai.Client]):
    """generateContent through the official `google-genai` SDK, SDK retries off."""

    protocol = "gemini"

    def __init__(self, settings: ModelSettings) -> None:
        super().__init__(settings)
        self._google: cloud.GoogleCredentials | None = None
        if settings.platform == Platform.VERTEX:
            self._google = cloud.GoogleCredentials("gemini", self._model, settings.project)
            self.credential = "Google credentials"

    def _sent_secrets(self) -> tuple[str, ...]:
        return self._google.tokens() if self._google is not None else ()

    def _new_client(self) -> genai.Client:
        """A Gemini Developer API client, or a Vertex AI one signed with Google's ADC."""
        options = types.HttpOptions(
            base_url=self._endpoint,
            timeout=max(1, int(self._timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
            client_args={"verify": shared_tls_context()},  # else each client builds its own
            async_client_args={"verify": shared_tls_context()},
        )
        if self._google is None:
            return genai.Client(vertexai=False, api_key=self._key, http_options=options)
        credentials, project = self._google.get()
        options.api_version = "v1"
        return genai.Client(
            vertexai=True,
            credentials=credentials,
            project=project,
            location=self._settings.region,
            http_options=options,
        )

    def _send(self, client: genai.Client, request: ModelRequest) -> ModelResponse:
        """Send one generateContent request and normalize the answer."""
        try:
            return self._send_once(client, request)
        except cloud.google_auth_errors() as exc:  # only raised on Vertex AI
            raise cloud.google_auth_failure("gemini", self._model, exc) from None

    def _send_once(self, client: genai.Client, request: ModelRequest) -> ModelResponse:
        try:
            response = client.models.generate_content(
                model=self._model, contents=_contents(request), config=_config(request)
            )
        except genai_errors.APIError as exc:
            raise self._status_error(exc) from None
        except (pydantic.ValidationError, genai_errors.UnknownApiResponseError):
            raise self._malformed() from None
        except _TIMEOUTS:
            raise failures.timeout_error("gemini", self._model, self._timeout) from None
        except _TRANSPORT as exc:
            raise failures.connection_error(
                "gemini", self._model, self._endpoint, exc, self._key
            ) from None
        try:
            return self._normalize(response, request)
        except (AttributeError, TypeError, ValueError):
            raise self._malformed() from None

    def _malformed(self) -> ProviderError:
        return failures.malformed_answer_error("gemini", self._model, self._endpoint)

    def _status_error(self, exc: genai_errors.APIError) -> ProviderError:
        detail = str(exc.message or exc.details or "")
        status = int(exc.code or 0)
        if status == 400 and any(marker in str(exc.details) for marker in _KEY_REJECTED):
            status = 401  # Gemini answers a bad key with 400 INVALID_ARGUMENT
        return failures.status_error(
            "gemini", self._model, status, detail, self._key, self.credential
        )

    def _normalize(self, response: Any, request: ModelRequest) -> ModelResponse:
        if not response.candidates:
            self._no_candidates(response)
        candidate = response.candidates[0]
        parts = (candidate.content.parts if candidate.content else None) or []
        digest = conversation_digest(request)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            if part.function_call is not None:
                calls.append(_tool_call(part, len(calls), digest))
            elif part.text and not part.thought:
                texts.append(part.text)
        raw = candidate.finish_reason
        raw_finish = str(getattr(raw, "value", raw)) if raw else None
        return ModelResponse(
            text="".join(texts),
            tool_calls=tuple(calls),
            finish_reason=_finish(raw_finish, bool(calls)),
            raw_finish_reason=raw_finish,
            usage=_usage(response.usage_metadata),
            model=getattr(response, "model_version", None) or self._model,
        )

    def _no_candidates(self, response: Any) -> NoReturn:
        """Raise for an answer without candidates: blocked, empty, or not Gemini's at all."""
        feedback = getattr(response, "prompt_feedback", None)
        meta = getattr(response, "usage_metadata", None)
        if feedback is None and meta is None:  # e.g. `{"error": ...}`, `[]`, `null`
            raise self._malformed()
        usage = _usage(meta)
        reason = getattr(feedback, "block_reason", None)
        if reason:
            error = failures.status_error(
                "gemini", self._model, 400, f"prompt blocked: {reason}", self._key
            )
            raise failures.with_usage(error, usage)
        raise failures.empty_answer_error("gemini", self._model, "no candidates", usage)


def _finish(raw: str | None, has_calls: bool) -> FinishReason:
    if has_calls:
        return FinishReason.TOOL_CALLS
    if raw in (None, "STOP"):
        return FinishReason.STOP
    if raw == "MAX_TOKENS":
        return FinishReason.LENGTH
    if raw in _FILTERED:
        return FinishReason.CONTENT_FILTER
    return FinishReason.OTHER


def _tool_call(part: Any, index: int, digest: str) -> ToolCall:
    call = part.function_call
    name = call.name or ""
    call_id = call.id or synthetic_call_id(digest, index, name)
    signature = part.thought_signature
    encoded = base64.b64encode(signature).decode("ascii") if signature else None
    args = call.args if call.args is not None else {}
    return object_call(call_id, name, args, signature=encoded)


def _config(request: ModelRequest) -> types.GenerateContentConfig:
    config = types.GenerateContentConfig(
        system_instruction=request.system or None,
        max_output_tokens=request.max_output_tokens,
        temperature=request.temperature,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    if request.tools:
        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in request.tools
        ]
        config.tools = [types.Tool(function_declarations=declarations)]
        config.tool_config = types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(mode=_MODE[request.tool_choice])
        )
    return config


def _contents(request: ModelRequest) -> list[types.Content]:
    """Gemini turns; consecutive tool results share one user turn."""
    out: list[types.Content] = []
    for message in request.messages:
        role, parts = _parts(message)
        if not parts:
            continue
        if out and out[-1].role == role and role == "user":
            out[-1].parts = [*(out[-1].parts or []), *parts]
        else:
            out.append(types.Content(role=role, parts=parts))
    return out


def _parts(message: Any) -> tuple[str, list[types.Part]]:
    if isinstance(message, ToolResultMessage):
        key = "error" if message.is_error else "output"
        response = types.FunctionResponse(
            id=None if is_synthetic(message.tool_call_id) else message.tool_call_id,
            name=message.name,
            response={key: message.content},
        )
        return "user", [types.Part(function_response=response)]
    if isinstance(message, AssistantMessage):
        parts = [types.Part(text=message.content)] if message.content else []
        parts.extend(_call_part(call) for call in message.tool_calls)
        return "model", parts
    return "user", [types.Part(text=message.content)] if message.content else []


def _call_part(call: ToolCall) -> types.Part:
    function_call = types.FunctionCall(
        id=None if is_synthetic(call.id) else call.id, name=call.name, args=call.arguments
    )
    signature = base64.b64decode(call.signature) if call.signature else None
    return types.Part(function_call=function_call, thought_signature=signature)


def _usage(meta: Any) -> Usage:
    if meta is None:
        return Usage()
    completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return Usage.reported(
        prompt=meta.prompt_token_count,
        completion=completion,
        total=meta.total_token_count,
        cache_read=meta.cached_content_token_count,
    )
