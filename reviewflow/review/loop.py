"""The native tool loop of one chunk session (000 §7): the model investigates with read-only
tools and proposes candidates through `code_comment` until `task_done`.

Our code owns control: the first request lets the model choose; a text answer adds a reminder
and forces tools from then on; three no-tool answers before any valid tool activity end the
session incomplete (`tool_loop_empty_limit_reached`); after valid activity one forced retry is
allowed and a second empty answer ends the turn. `review.max_tool_rounds` ends it incomplete
(`tool_loop_limit_reached`), as does the local token guard at 80% of `max_chunk_tokens`
(`token_limit_reached`); compression runs first, from 60%.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from reviewflow.config import ReviewSettings
from reviewflow.context.query import CodeIndex
from reviewflow.models import ReviewWarning
from reviewflow.providers.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolChoice,
    UserMessage,
)
from reviewflow.review import templates, tools
from reviewflow.review.compress import TRIGGER_SHARE, compress, split_point
from reviewflow.review.jobs import FileJob
from reviewflow.review.reader import Snapshot
from reviewflow.review.recording import Where, send_recorded
from reviewflow.review.records import ChunkResult, RequestRecord, Send
from reviewflow.review.session import ToolSession, context_budget
from reviewflow.review.tokens import estimate_request

GUARD_SHARE = 0.8
EMPTY_LIMIT = 3


@dataclass
class _State:
    """What the loop tracks besides the tools: conversation, tool choice, outcome."""

    path: str
    label: str  # "chunk 1/3", for warnings
    messages: list[Message]
    system: str  # the main system prompt, with the team's instructions if any
    choice: ToolChoice = ToolChoice.AUTO
    empty: int = 0  # consecutive no-tool answers before any valid tool activity
    active: bool = False  # valid tool activity seen
    retried: bool = False  # the forced retry after activity was used
    compressing: bool = True
    records: list[RequestRecord] = field(default_factory=list)
    warnings: list[ReviewWarning] = field(default_factory=list)
    complete: bool | None = None  # None while the session runs

    def warn(self, code: str, message: str) -> None:
        self.warnings.append(ReviewWarning(code, f"{self.label}: {message}", self.path))

    def stop(self, code: str, message: str) -> None:
        self.warn(code, message)
        self.complete = False


def review_chunk(
    job: FileJob,
    chunk: int,
    guidance: str | None,
    snapshot: Snapshot,
    settings: ReviewSettings,
    send: Send,
    symbols: Callable[[], CodeIndex] | None = None,
) -> ChunkResult:
    """One tool-loop session over chunk `chunk` of `job`: its candidates, records, warnings.

    `symbols` loads the code index the symbol tools read (on their first call); without it
    they are not offered."""
    budget = context_budget(job.changed_lines, settings.max_context_tool_calls)
    session = ToolSession(snapshot, job.path, chunk, budget, symbols=symbols)
    first = UserMessage(content=templates.main_user(job, chunk, guidance, budget))
    label = f"chunk {chunk + 1}/{len(job.chunks)}"
    state = _State(job.path, label, [first], templates.main_system(job))
    _run(state, session, settings, send)
    _check_comments(state, session)
    return ChunkResult(
        path=job.path,
        complete=bool(state.complete),
        warnings=tuple(state.warnings),
        records=tuple(state.records),
        chunk=chunk,
        chunks=len(job.chunks),
        candidates=tuple(session.candidates),
        tool_calls=session.calls,
    )


def _run(state: _State, session: ToolSession, settings: ReviewSettings, send: Send) -> None:
    for number in range(1, settings.max_tool_rounds + 1):
        where = Where("main", state.path, session.chunk, number)
        request = _prepare(state, session, settings, send, where)
        if request is None:
            limit = settings.max_chunk_tokens
            message = f"the conversation reached 80% of review.max_chunk_tokens ({limit})"
            state.stop("token_limit_reached", message)
            return
        response, record = send_recorded(send, request, where)
        if response is None:
            state.records.append(record)
            code = "budget_reached" if record.status == "not_sent" else "provider_error"
            state.stop(code, record.error or "the model request failed")
            return
        _advance(state, session, response, record)
        if state.complete is not None:
            return
    rounds = settings.max_tool_rounds
    message = f"the model used all {rounds} tool rounds (review.max_tool_rounds)"
    state.stop("tool_loop_limit_reached", message)


def _check_comments(state: _State, session: ToolSession) -> None:
    """Findings the model tried to record but could not (each was told why): when none of
    its `code_comment` calls could be recorded, what it found is lost, so the chunk is
    incomplete; when some could, a warning says how many were not."""
    rejected = session.rejected_comments
    if not rejected:
        return
    if not session.candidates:
        calls = "its code_comment call" if rejected == 1 else f"all {rejected} code_comment calls"
        message = f"no finding could be recorded: {calls} had invalid arguments"
        state.stop("code_comment_invalid", message)
        return
    total = rejected + len(session.candidates)
    message = f"{rejected} of {total} code_comment calls had invalid arguments (not recorded)"
    state.warn("code_comment_rejected", message)


def _request(state: _State, session: ToolSession) -> ModelRequest:
    return ModelRequest(
        system=state.system,
        messages=tuple(state.messages),
        tools=tools.offered(session.context_allowed, session.symbols is not None),
        tool_choice=state.choice,
    )


def _prepare(
    state: _State, session: ToolSession, settings: ReviewSettings, send: Send, where: Where
) -> ModelRequest | None:
    """The next request, compressed when it reaches 60%; None when it stays at 80% or more."""
    request = _request(state, session)
    capacity = settings.max_chunk_tokens
    if state.compressing and estimate_request(request) >= TRIGGER_SHARE * capacity:
        split = split_point(request.messages, capacity)
        if split is not None:
            outcome = compress(request.messages, split, send, replace(where, stage="compress"))
            state.records.append(outcome.record)
            if outcome.messages is None:
                state.compressing = False
                state.warn("compression_failed", outcome.problem or "compression failed")
            else:
                state.messages = list(outcome.messages)
                request = _request(state, session)
    if estimate_request(request) >= GUARD_SHARE * capacity:
        return None
    return request


def _advance(
    state: _State, session: ToolSession, response: ModelResponse, record: RequestRecord
) -> None:
    """Take one answer: run its tool calls, or handle a no-tool answer."""
    if response.text or response.tool_calls:
        state.messages.append(response.assistant_message())
    if not response.tool_calls:
        state.records.append(record)
        _no_tools(state)
        return
    outcomes = [session.run(call) for call in response.tool_calls]
    state.messages.extend(outcome.message for outcome in outcomes)
    state.records.append(
        record.model_copy(update={"tool_calls": tuple(o.record for o in outcomes)})
    )
    state.empty = 0
    if any(outcome.valid for outcome in outcomes):
        state.active, state.retried = True, False
    if any(outcome.done for outcome in outcomes):
        state.complete = True


def _no_tools(state: _State) -> None:
    if state.active:
        if state.retried:
            state.complete = True  # the model ended its turn after real work
            return
        state.retried = True
    else:
        state.empty += 1
        if state.empty >= EMPTY_LIMIT:
            message = f"the model answered {EMPTY_LIMIT} times without calling a tool"
            state.stop("tool_loop_empty_limit_reached", message)
            return
    state.messages.append(UserMessage(content=templates.reminder()))
    state.choice = ToolChoice.REQUIRED
