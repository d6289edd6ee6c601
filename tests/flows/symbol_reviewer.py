"""A scripted reviewer that asks the symbol tools where they are offered: in the main stage,
`symbol_references` beside its first read of a file it has findings for; in verification,
`symbol_definition` as the first step of each answer. Every other request is answered as
`ScriptedReviewer` answers it. What each stage was offered is kept, per request."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.flows.reviewer import ScriptedReviewer, assistant_turns, stage_of
from tests.review.helpers import tool_names
from tests.wire_server import Call, RecordedRequest, Reply, ToolCalls


class SymbolReviewer(ScriptedReviewer):
    """`references`: the `symbol_references` arguments of the main stage's first round;
    `definition`: the `symbol_definition` arguments of each verification answer's first round
    (either None: that stage asks no symbol tool)."""

    def __init__(
        self,
        findings: Mapping[str, list[dict[str, Any]]],
        *,
        references: dict[str, str] | None = None,
        definition: dict[str, str] | None = None,
    ) -> None:
        super().__init__(findings)
        self.references, self.definition = references, definition
        self.offered: dict[str, list[list[str]]] = {"main": [], "verify_answer": []}

    def __call__(self, record: RecordedRequest) -> Reply:
        stage = stage_of(json.dumps(record.body, ensure_ascii=False))
        if stage in self.offered and assistant_turns(record) == 0:
            with self._lock:
                self.offered[stage].append(tool_names(record.protocol, record.body))
        return super().__call__(record)

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        reply = super()._main(record, text)
        names = tool_names(record.protocol, record.body)
        first_read = assistant_turns(record) == 0 and isinstance(reply, ToolCalls)
        if self.references is None or not first_read or "symbol_references" not in names:
            return reply
        assert isinstance(reply, ToolCalls)
        if [call.name for call in reply.calls] != ["file_read"]:
            return reply  # a file with nothing to report: done at once
        return ToolCalls(*reply.calls, Call("symbol_references", self.references))

    def _verify(self, stage: str, record: RecordedRequest, text: str) -> Reply:
        names = tool_names(record.protocol, record.body)
        asking = stage == "verify_answer" and assistant_turns(record) == 0
        if self.definition is not None and asking and "symbol_definition" in names:
            return ToolCalls(Call("symbol_definition", self.definition))
        return super()._verify(stage, record, text)


def tool_answers(requests: list[RecordedRequest], stage: str, tool: str) -> list[str]:
    """The answers the model was sent to its `tool` calls in `stage`'s requests (OpenAI's
    wire form: a tool message carries its call's ID, the assistant message the call)."""
    found = []
    for record in requests:
        if stage_of(json.dumps(record.body, ensure_ascii=False)) != stage:
            continue
        messages = record.body["messages"]
        named = {
            call["id"]: call["function"]["name"]
            for message in messages
            if message["role"] == "assistant"
            for call in message.get("tool_calls") or []
        }
        found += [
            m["content"]
            for m in messages
            if m["role"] == "tool" and named.get(m["tool_call_id"]) == tool
        ]
    return list(dict.fromkeys(found))  # a later round repeats the earlier ones
