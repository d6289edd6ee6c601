"""The normalized protocol's own rules, without any server."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reviewflow.providers import (
    ModelRequest,
    ModelResponse,
    RequireTool,
    ToolCall,
    ToolDefinition,
    Usage,
    UserMessage,
)
from reviewflow.providers.failures import redact, status_error
from reviewflow.providers.shared import object_call, parse_arguments, synthetic_call_id


def test_usage_total_falls_back_to_prompt_plus_completion() -> None:
    assert Usage.reported(prompt=10, completion=5).total_tokens == 15
    assert Usage.reported(prompt=10, completion=5, total=18).total_tokens == 18
    assert Usage.reported(prompt=None, completion=None) == Usage()
    both = Usage.reported(1, 2, cache_read=3) + Usage.reported(4, 5, cache_write=6)
    assert both == Usage(
        prompt_tokens=5,
        completion_tokens=7,
        total_tokens=12,
        cache_read_tokens=3,
        cache_write_tokens=6,
    )


def test_required_tool_choice_needs_tools() -> None:
    with pytest.raises(ValidationError):
        ModelRequest(messages=(UserMessage(content="x"),), tool_choice=RequireTool)
    tool = ToolDefinition(name="task_done", description="d")
    with pytest.raises(ValidationError):
        ModelRequest(messages=(UserMessage(content="x"),), tools=(tool, tool))


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("") == ({}, None)
    assert parse_arguments('{"a": ')[1]
    assert "object" in str(parse_arguments("[1]")[1])
    assert object_call("i", "n", "not json").arguments_error
    assert object_call("i", "n", {"b": 2}).arguments_json == '{"b": 2}'


def test_synthetic_ids_are_stable_and_distinct() -> None:
    assert synthetic_call_id("d", 0, "n") == synthetic_call_id("d", 0, "n")
    assert len({synthetic_call_id("d", i, "n") for i in range(3)}) == 3
    assert synthetic_call_id("d", 0, "n") != synthetic_call_id("e", 0, "n")


def test_assistant_message_keeps_calls() -> None:
    call = ToolCall(id="c1", name="file_read", arguments={"file_path": "a"})
    message = ModelResponse(text="t", tool_calls=(call,)).assistant_message()
    assert message.tool_calls == (call,) and message.content == "t"


def test_error_text_is_redacted_and_one_line() -> None:
    error = status_error("openai", "m", 401, "bad key sk-secret-123\nline two", "sk-secret-123")
    assert (
        str(error) == "openai model 'm': HTTP 401 (API key rejected): bad key [REDACTED] line two"
    )
    assert redact("abc", [None, ""]) == "abc"


def test_escaped_and_stripped_forms_of_the_key_are_redacted() -> None:
    key = "sk-SECRET-12345\n"
    text = "Illegal header value b'Bearer sk-SECRET-12345\\n' and \"sk-SECRET-12345\\n\""
    assert "SECRET" not in redact(text, [key])
    assert "SECRET" not in redact("plain sk-SECRET-12345 here", [key])
