"""Verification step 2: each falsification question answered from the code with the read-only
tools (`file_read`, `code_search`, `file_find`, and with `review.context` on the symbol tools
`symbol_definition` and `symbol_references`, answering from the tool loops' code index of the
new side), under one budget of context calls per finding.

The answering requests never see the finding's reasoning: only the question, the finding's
path and lines, and the code placed there (repository data). Questions are answered one by one
in conversations of their own (factored), sharing the budget and the read cache: a second read
of the same lines is free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reviewflow.context.query import CodeIndex
from reviewflow.errors import ToolError
from reviewflow.findings.answers import PROMPTS
from reviewflow.findings.models import Finding
from reviewflow.prompts import render
from reviewflow.providers.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from reviewflow.review import tools
from reviewflow.review.reader import Snapshot
from reviewflow.review.recording import Where, bounded, bounded_arguments, send_recorded
from reviewflow.review.records import MAX_RECORDED_TEXT, RequestRecord, Send, ToolRecord
from reviewflow.review.session import ToolOutcome, ToolSession

MAX_ANSWER_ROUNDS = 4  # per question; the last one offers no tools, so the model must answer
MAX_ANSWER_CHARS = 1500
NO_ANSWER = "unknown: no answer was given"


@dataclass(frozen=True, slots=True)
class Answered:
    """The answers in question order, the requests they took, and why they stopped (if so)."""

    answers: tuple[str, ...]
    records: tuple[RequestRecord, ...]
    tool_calls: int
    failure: str | None = None  # a request failed: the verification cannot be trusted


class _AnswerSession(ToolSession):
    """A tool session offering only the read-only tools (the symbol tools with a loader of the
    index), its budget shared by a finding's questions."""

    def offered(self) -> tuple[ToolDefinition, ...]:
        if not self.context_allowed:
            return ()
        return tools.answering(self.symbols is not None)

    def run(self, call: ToolCall) -> ToolOutcome:
        names = [d.name for d in tools.answering(self.symbols is not None)]
        if call.name in names:
            return super().run(call)
        self.calls += 1
        return _refusal(call, f"error: unknown tool '{call.name}': use {', '.join(names)}")

    def _charge(self) -> None:
        if not self.context_allowed:
            raise ToolError(f"the budget of {self.budget} context calls is spent: answer now")
        self.used += 1


def answer_questions(
    questions: Sequence[str],
    finding: Finding,
    snapshot: Snapshot,
    budget: int,
    send: Send,
    symbols: Callable[[], CodeIndex] | None = None,
) -> Answered:
    """Answer each question from the code (at most `budget` context calls in all); `symbols`
    loads the index the symbol tools read (on their first call; None: not offered)."""
    session = _AnswerSession(snapshot, finding.path, 0, budget, symbols=symbols)
    answers: list[str] = []
    records: list[RequestRecord] = []
    for question in questions:
        answer, failure = _answer(question, finding, session, send, records)
        if failure is not None:
            return Answered(tuple(answers), tuple(records), session.calls, failure)
        answers.append(answer)
    return Answered(tuple(answers), tuple(records), session.calls)


def answer_request(
    question: str,
    finding: Finding,
    messages: Sequence[Message],
    offered: tuple[ToolDefinition, ...],
    symbols: bool = False,
) -> ModelRequest:
    """One answering request: the system prompt (saying what the symbol tools are when the
    session has them), the conversation, the tools still offered."""
    first = UserMessage(
        content=render(
            PROMPTS,
            "verify_answer_user.j2",
            question=question,
            path=finding.path,
            start_line=finding.start_line,
            end_line=finding.end_line,
            code=finding.existing_code,
        )
    )
    return ModelRequest(
        system=render(PROMPTS, "verify_answer_system.j2", symbols=symbols),
        messages=(first, *messages),
        tools=offered,
    )


def _answer(
    question: str,
    finding: Finding,
    session: _AnswerSession,
    send: Send,
    records: list[RequestRecord],
) -> tuple[str, str | None]:
    """One question's answer (or NO_ANSWER), and the error of a failed request."""
    messages: list[Message] = []
    for number in range(1, MAX_ANSWER_ROUNDS + 1):
        offered = session.offered() if number < MAX_ANSWER_ROUNDS else ()
        request = answer_request(question, finding, messages, offered, session.symbols is not None)
        where = Where("verify_answer", finding.path, None, number)
        response, record = send_recorded(send, request, where)
        if response is None:
            records.append(record)
            return "", record.error or "the model request failed"
        if not response.tool_calls or not offered:
            records.append(record)
            return _text(response), None
        outcomes = [session.run(call) for call in response.tool_calls]
        messages += [response.assistant_message(), *(outcome.message for outcome in outcomes)]
        records.append(record.model_copy(update={"tool_calls": tuple(o.record for o in outcomes)}))
    return NO_ANSWER, None  # not reached: the last round offers no tools


def _text(response: ModelResponse) -> str:
    text = " ".join(response.text.split())
    return bounded(text, MAX_ANSWER_CHARS) if text else NO_ANSWER


def _refusal(call: ToolCall, output: str) -> ToolOutcome:
    message = ToolResultMessage(tool_call_id=call.id, name=call.name, content=output, is_error=True)
    record = ToolRecord(
        id=call.id,
        name=call.name,
        arguments=bounded_arguments(call.arguments),
        status="error",
        output=bounded(output, MAX_RECORDED_TEXT),
    )
    return ToolOutcome(message, record, valid=False)
