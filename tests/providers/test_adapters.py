"""Each adapter against the wire server: request bodies, IDs, tool choice, usage, errors."""

from __future__ import annotations

import traceback
from typing import Any

import openai
import pytest

from reviewflow.errors import PermanentProviderError, TransientProviderError
from reviewflow.providers import (
    FinishReason,
    ModelRequest,
    ModelResponse,
    Provider,
    RequireTool,
    ToolChoice,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    create_provider,
)
from reviewflow.providers.failures import (
    EndpointUnreachableError,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderTimeoutError,
)
from tests.wire_server import (
    TEST_KEY,
    Call,
    Delay,
    Disconnect,
    Empty,
    HttpError,
    Text,
    ToolCalls,
    WireServer,
    WireUsage,
)

TOOLS = (
    ToolDefinition(
        name="file_read",
        description="Read lines of a file.",
        parameters={
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "start_line": {"type": "integer"}},
            "required": ["file_path"],
        },
    ),
    ToolDefinition(name="task_done", description="Finish the review of this file."),
)
SYSTEM = "You review code. Security rules live here."
USER = "Untrusted diff:\n```diff\n+x = 1\n```"


def _request(messages: tuple[Any, ...], choice: ToolChoice = ToolChoice.AUTO) -> ModelRequest:
    return ModelRequest(system=SYSTEM, messages=messages, tools=TOOLS, tool_choice=choice)


def _provider(wire: WireServer, protocol: str, **kwargs: Any) -> Provider:
    return create_provider(wire.settings(protocol, **kwargs))


def _results(response: ModelResponse, prefix: str) -> tuple[ToolResultMessage, ...]:
    return tuple(
        ToolResultMessage(tool_call_id=c.id, name=c.name, content=f"{prefix}:{c.id}")
        for c in response.tool_calls
    )


def _history_ids(protocol: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(tool call IDs, tool result IDs) in a recorded request body, in order."""
    calls: list[str] = []
    results: list[str] = []
    if protocol == "openai":
        for m in body["messages"]:
            calls += [c["id"] for c in m.get("tool_calls") or []]
            if m["role"] == "tool":
                results.append(m["tool_call_id"])
    elif protocol == "anthropic":
        for m in body["messages"]:
            for block in m["content"]:
                if block["type"] == "tool_use":
                    calls.append(block["id"])
                elif block["type"] == "tool_result":
                    results.append(block["tool_use_id"])
    else:
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionCall" in part:
                    calls.append(part["functionCall"].get("id", "<none>"))
                if "functionResponse" in part:
                    results.append(part["functionResponse"].get("id", "<none>"))
    return calls, results


def test_three_round_tool_conversation_keeps_ids(wire: WireServer, protocol: str) -> None:
    wire.script(
        protocol,
        [
            ToolCalls(Call("file_read", {"file_path": "a.py"})),
            ToolCalls(
                Call("file_read", {"file_path": "b.py", "start_line": 3}),
                Call("task_done", {}),
            ),
            Text("All done."),
        ],
    )
    provider = _provider(wire, protocol)
    messages: tuple[Any, ...] = (UserMessage(content=USER),)
    first = provider.complete(_request(messages))
    assert [c.name for c in first.tool_calls] == ["file_read"]
    assert first.tool_calls[0].arguments == {"file_path": "a.py"}
    assert first.finish_reason is FinishReason.TOOL_CALLS
    messages += (first.assistant_message(), *_results(first, "r1"))
    second = provider.complete(_request(messages))
    assert [c.name for c in second.tool_calls] == ["file_read", "task_done"]
    messages += (second.assistant_message(), *_results(second, "r2"))
    third = provider.complete(_request(messages))
    assert third.text == "All done." and not third.tool_calls
    provider.close()

    ids = [c.id for c in (*first.tool_calls, *second.tool_calls)]
    assert len(set(ids)) == 3
    bodies = [r.body for r in wire.requests(protocol)]
    assert _history_ids(protocol, bodies[1]) == (ids[:1], ids[:1])
    assert _history_ids(protocol, bodies[2]) == (ids, ids)
    wire.assert_done()


def test_openai_request_is_what_the_sdks_typed_create_sends(wire: WireServer) -> None:
    """The adapter posts its plain JSON without the SDK's param transform: the same body, path
    and bearer key as `chat.completions.create` sends for it."""
    wire.script("openai", [ToolCalls(Call("file_read", {"file_path": "a.py"})), Text("ok")])
    first = _provider(wire, "openai").complete(_request((UserMessage(content=USER),)))
    messages = (UserMessage(content=USER), first.assistant_message(), *_results(first, "r"))
    wire.script("openai", [Text("ok"), Text("ok")])
    _provider(wire, "openai").complete(_request(messages))
    ours = wire.requests("openai")[-1]
    client = openai.OpenAI(api_key=TEST_KEY, base_url=wire.base_url("openai"), max_retries=0)
    client.chat.completions.create(**ours.body)
    typed = wire.requests("openai")[-1]
    assert ours.body == typed.body and ours.path == typed.path
    assert ours.headers["authorization"] == typed.headers["authorization"] == f"Bearer {TEST_KEY}"


def test_system_and_user_content_go_where_they_belong(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Text()])
    _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))
    body = wire.requests(protocol)[0].body
    if protocol == "openai":
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert body["messages"][1] == {"role": "user", "content": USER}
    elif protocol == "anthropic":
        assert body["system"] == [
            {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
        ]
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": USER}]}]
    else:
        assert body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
        assert body["contents"] == [{"role": "user", "parts": [{"text": USER}]}]


FORCED = {
    "openai": lambda body: body["tool_choice"] == "required",
    "anthropic": lambda body: body["tool_choice"] == {"type": "any"},
    "gemini": lambda body: body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY",
}
NONE = {
    "openai": lambda body: body["tool_choice"] == "none",
    "anthropic": lambda body: body["tool_choice"] == {"type": "none"},
    "gemini": lambda body: body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE",
}


def test_tool_choice_is_sent_in_the_providers_form(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Text(), Text()])
    provider = _provider(wire, protocol)
    provider.complete(_request((UserMessage(content=USER),), RequireTool))
    provider.complete(_request((UserMessage(content=USER),), ToolChoice.NONE))
    forced, none = (r.body for r in wire.requests(protocol))
    assert FORCED[protocol](forced)
    assert NONE[protocol](none)


def test_tool_definitions_carry_the_json_schema(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Text()])
    _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))
    body = wire.requests(protocol)[0].body
    schema = TOOLS[0].parameters
    if protocol == "openai":
        assert body["tools"][0]["function"] == {
            "name": "file_read",
            "description": "Read lines of a file.",
            "parameters": schema,
        }
    elif protocol == "anthropic":
        assert body["tools"][0]["input_schema"] == schema
        assert "cache_control" not in body["tools"][0]
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    else:
        declaration = body["tools"][0]["functionDeclarations"][0]
        assert declaration["name"] == "file_read"
        assert schema in declaration.values()


def test_usage_with_cache_counters(wire: WireServer, protocol: str) -> None:
    usage = WireUsage(prompt=100, completion=20, total=None, cache_read=60, cache_write=30)
    wire.script(protocol, [Text("x", usage=usage)])
    got = _provider(wire, protocol).complete(_request((UserMessage(content=USER),))).usage
    assert got.cache_read_tokens == 60
    assert got.completion_tokens == 20
    if protocol == "anthropic":  # input_tokens excludes cached tokens: prompt counts them all
        assert got.prompt_tokens == 190 and got.cache_write_tokens == 30
    elif protocol == "openai":
        assert got.prompt_tokens == 100 and got.cache_write_tokens == 30
    else:
        assert got.prompt_tokens == 100 and got.cache_write_tokens == 0
    assert got.total_tokens == got.prompt_tokens + got.completion_tokens


def test_malformed_tool_arguments_are_reported_not_raised(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [ToolCalls(Call("file_read", '{"file_path": "a.py"'))])
    response = _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))
    if protocol == "gemini":  # Gemini never sends such a call: it reports the finish reason
        assert response.raw_finish_reason == "MALFORMED_FUNCTION_CALL"
        assert response.tool_calls == ()
        return
    (call,) = response.tool_calls
    assert call.arguments == {} and call.arguments_error
    assert call.arguments_json == '{"file_path": "a.py"'


def test_gemini_call_without_id_gets_a_stable_synthetic_one(wire: WireServer) -> None:
    reply = ToolCalls(Call("file_read", {"file_path": "a.py"}, id=None, signature="c2lnbmF0dXJl"))
    wire.script("gemini", [reply, reply, Text()])
    provider = _provider(wire, "gemini")
    request = _request((UserMessage(content=USER),))
    first = provider.complete(request)
    assert first.tool_calls[0].id == provider.complete(request).tool_calls[0].id
    call = first.tool_calls[0]
    assert call.id.startswith("rfcall_") and call.signature == "c2lnbmF0dXJl"
    provider.complete(
        _request((*request.messages, first.assistant_message(), *_results(first, "r")))
    )
    body = wire.requests("gemini")[2].body
    model_turn, result_turn = body["contents"][1], body["contents"][2]
    assert model_turn["parts"][0]["functionCall"] == {
        "name": "file_read",
        "args": {"file_path": "a.py"},
    }
    assert model_turn["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJl"
    response_part = result_turn["parts"][0]["functionResponse"]
    assert response_part["name"] == "file_read" and "id" not in response_part


def test_empty_answer(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Empty()])
    provider = _provider(wire, protocol)
    if protocol == "anthropic":  # an empty content list is a legitimate (empty) turn
        assert provider.complete(_request((UserMessage(content=USER),))).text == ""
        return
    with pytest.raises(TransientProviderError, match="empty answer"):
        provider.complete(_request((UserMessage(content=USER),)))


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ProviderAuthError),
        (403, ProviderAuthError),
        (404, ModelNotFoundError),
        (400, PermanentProviderError),
        (422, PermanentProviderError),
        (408, TransientProviderError),
        (429, TransientProviderError),
        (500, TransientProviderError),
        (503, TransientProviderError),
    ],
)
def test_http_errors_are_typed_and_never_carry_the_key(
    wire: WireServer, protocol: str, status: int, kind: type[Exception]
) -> None:
    wire.script(protocol, [HttpError(status)])
    with pytest.raises(kind) as caught:
        _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))
    assert wire.requests(protocol)[0].credential == TEST_KEY  # the server saw it, and echoed it
    message = str(caught.value)
    assert f"HTTP {status}" in message and protocol in message and "test-model" in message
    assert "\n" not in message
    assert "[REDACTED]" in message
    assert TEST_KEY not in "".join(traceback.format_exception(caught.value))
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_gemini_bad_key_as_400_counts_as_rejected_key(wire: WireServer) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"reason": "API_KEY_INVALID"}],
        }
    }
    wire.script("gemini", [HttpError(400, body=body)])
    with pytest.raises(ProviderAuthError):
        _provider(wire, "gemini").complete(_request((UserMessage(content=USER),)))


def test_disconnect_is_a_transient_connection_error(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Disconnect()])
    with pytest.raises(EndpointUnreachableError):
        _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))


def test_timeout_is_transient(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [Delay(5)])
    with pytest.raises(ProviderTimeoutError, match=r"0\.3s"):
        _provider(wire, protocol, timeout=0.3).complete(_request((UserMessage(content=USER),)))


def test_unreachable_endpoint(protocol: str) -> None:
    with WireServer() as gone:
        settings = gone.settings(protocol)
    with pytest.raises(EndpointUnreachableError, match="could not reach the model at"):
        create_provider(settings).complete(_request((UserMessage(content=USER),)))


def test_sdk_retries_are_off(wire: WireServer, protocol: str) -> None:
    wire.script(protocol, [HttpError(503), Text()])
    with pytest.raises(TransientProviderError):
        _provider(wire, protocol).complete(_request((UserMessage(content=USER),)))
    assert len(wire.requests(protocol)) == 1
