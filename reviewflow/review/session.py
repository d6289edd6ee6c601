"""One chunk session's tool state: the context-call budget, the call cache, the candidates.

Identical context calls (and a `file_read` range inside an earlier read of the same file) are
answered from the cache with the real content again, and cost no budget. Sessions share
nothing: chunks of one file may run in parallel, each with its own budget and cache. The code
index the symbol tools read is loaded on the session's first symbol call and kept for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from pydantic import BaseModel, ValidationError

from reviewflow.context.query import CodeIndex
from reviewflow.errors import ReviewError, ToolError
from reviewflow.models import Candidate
from reviewflow.providers.messages import ToolCall, ToolResultMessage
from reviewflow.review import tools
from reviewflow.review.candidates import candidate_from
from reviewflow.review.reader import Snapshot, confine
from reviewflow.review.recording import bounded, bounded_arguments
from reviewflow.review.records import MAX_RECORDED_TEXT, ToolRecord

Status = Literal["ok", "error", "cached"]
ArgsT = TypeVar("ArgsT", bound=BaseModel)


def context_budget(changed_lines: int, maximum: int) -> int:
    """Context calls for a file: 6 up to 10 changed lines, 8 up to 50, else `maximum`
    (never more than `maximum`)."""
    if changed_lines <= 10:
        return min(6, maximum)
    if changed_lines <= 50:
        return min(8, maximum)
    return maximum


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The answer to one call, and what it means for the loop."""

    message: ToolResultMessage
    record: ToolRecord
    valid: bool  # counts as valid tool activity
    done: bool = False  # task_done


@dataclass
class _FileRead:
    lines: list[str]
    spans: list[tuple[int, int]] = field(default_factory=list)

    def covers(self, start: int, end: int) -> bool:
        total = len(self.lines)
        return any(s <= start and min(end, total) <= min(e, total) for s, e in self.spans)


@dataclass
class ToolSession:
    """The tools of one chunk session over `snapshot`, reviewing `path`."""

    snapshot: Snapshot
    path: str
    chunk: int
    budget: int
    used: int = 0
    calls: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    rejected_comments: int = 0  # code_comment calls whose arguments held no finding
    symbols: Callable[[], CodeIndex] | None = None  # loads the index; None: no symbol tools
    _index: CodeIndex | None = None
    _results: dict[str, str] = field(default_factory=dict)
    _reads: dict[str, _FileRead] = field(default_factory=dict)

    @property
    def context_allowed(self) -> bool:
        return self.used < self.budget

    def run(self, call: ToolCall) -> ToolOutcome:
        """Execute one call; every problem becomes a tool error the model can read."""
        clock = time.monotonic()
        self.calls += 1
        status: Status = "ok"
        done = False
        try:
            if call.arguments_error is not None:
                raise ToolError(f"arguments are not a JSON object ({call.arguments_error})")
            if call.name == "task_done":
                done, output = True, "Review finished."
            elif call.name == "code_comment":
                output = self._comment(call)
            elif call.name in tools.CONTEXT_TOOLS:
                status, output = self._context(call)
            elif call.name in tools.SYMBOL_TOOLS and self.symbols is not None:
                status, output = self._symbol(call)
            else:
                names = ", ".join(d.name for d in tools.offered(True, self.symbols is not None))
                raise ToolError(f"unknown tool '{call.name}': use {names}")
        except ToolError as err:
            status, output = "error", f"error: {err}"
            self.rejected_comments += call.name == "code_comment"
        message = ToolResultMessage(
            tool_call_id=call.id, name=call.name, content=output, is_error=status == "error"
        )
        record = ToolRecord(
            id=call.id,
            name=call.name,
            arguments=bounded_arguments(call.arguments),
            status=status,
            output=bounded(output, MAX_RECORDED_TEXT),
            duration_ms=int((time.monotonic() - clock) * 1000),
        )
        return ToolOutcome(message, record, valid=status != "error", done=done)

    def _comment(self, call: ToolCall) -> str:
        candidate = candidate_from(call.arguments, self.path, self.chunk)
        self.candidates.append(candidate)
        return f"Recorded finding {len(self.candidates)}: {candidate.title or '(untitled)'}."

    def _context(self, call: ToolCall) -> tuple[Status, str]:
        if call.name == "file_read":
            args = _parse(tools.FileReadArgs, call)
            return self._read(args)
        model = tools.CodeSearchArgs if call.name == "code_search" else tools.FileFindArgs
        parsed = _parse(model, call)
        key = f"{call.name}:{parsed.model_dump_json()}"
        if key in self._results:
            return "cached", self._results[key]
        self._charge()
        if isinstance(parsed, tools.CodeSearchArgs):
            output = tools.code_search(self.snapshot, parsed)
        else:
            assert isinstance(parsed, tools.FileFindArgs)
            output = tools.file_find(self.snapshot, parsed)
        self._results[key] = output
        return "ok", output

    def _symbol(self, call: ToolCall) -> tuple[Status, str]:
        args = _parse(tools.SymbolArgs, call)
        key = f"{call.name}:{args.model_dump_json()}"
        if key in self._results:
            return "cached", self._results[key]
        args.parts(), args.path()  # bad names and paths are refused before they cost a call
        index = self._loaded() if self.context_allowed else None  # a failed load costs nothing
        self._charge()
        assert index is not None
        if call.name == "symbol_definition":
            output = tools.symbol_definition(index, args)
        else:
            output = tools.symbol_references(index, args)
        self._results[key] = output
        return "ok", output

    def _loaded(self) -> CodeIndex:
        """The code index, loaded on the first symbol call (a store or Git problem is a tool
        error the model reads: it can still use the other tools)."""
        if self._index is None:
            assert self.symbols is not None
            try:
                self._index = self.symbols()
            except ReviewError as err:
                raise ToolError(
                    f"the code index of the reviewed tree cannot be read: {err}"
                ) from None
        return self._index

    def _read(self, args: tools.FileReadArgs) -> tuple[Status, str]:
        start, end = args.span()
        path = confine(self.snapshot, args.file_path)
        known = self._reads.get(path)
        if known is not None and known.covers(start, end):
            return "cached", tools.render_read(path, known.lines, start, end)
        self._charge()
        if known is None:
            known = self._reads[path] = _FileRead(tools.read_lines(self.snapshot, path))
        output = tools.render_read(path, known.lines, start, end)
        known.spans.append((start, end))
        return "ok", output

    def _charge(self) -> None:
        if not self.context_allowed:
            raise ToolError(
                f"the context budget of {self.budget} calls is spent: "
                "only code_comment and task_done remain"
            )
        self.used += 1


def _parse(model: type[ArgsT], call: ToolCall) -> ArgsT:
    try:
        return model.model_validate(call.arguments)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
        )
        raise ToolError(f"invalid arguments for {call.name}: {problems}") from None
