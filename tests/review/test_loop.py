"""The tool loop against the scripted wire server, through the official SDKs."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.providers import ModelRequest, ModelResponse, ProviderPool
from reviewflow.providers.failures import ProviderFailure
from reviewflow.review.jobs import FileJob
from reviewflow.review.loop import review_chunk
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import ChunkResult, total_usage
from tests.gitutil import GitRepo
from tests.review.helpers import (
    commit_scope,
    conversation,
    forced,
    jobs_and_snapshot,
    prefix,
    sending,
    tool_names,
)
from tests.wire_server import PROTOCOLS, Call, HttpError, Text, ToolCalls, WireServer, WireUsage

FINDING = {
    "severity": "high",
    "category": "correctness",
    "file": "app.py",
    "start_line": 4,
    "end_line": 4,
    "existing_code": "    return os.getcwd() / 0",
    "title": "Division of a path by zero",
    "problem": "Raises at runtime.",
    "evidence": "Line 4 divides by 0.",
    "suggestion": "Return the path.",
    "confidence": 0.9,
}


@pytest.fixture
def change(repo: GitRepo, rf_home: Path) -> tuple[dict[str, FileJob], Snapshot]:
    for name in ("a", "b", "c"):
        repo.write(f"lib/{name}.py", "".join(f"{name}_{i} = '{i:>40}'\n" for i in range(40)))
    repo.write("app.py", "import os\n\ndef main():\n    return os.getcwd()\n")
    repo.write("other.py", "X = 1\n")
    repo.commit("base")
    repo.write("app.py", "import os\n\ndef main():\n    return os.getcwd() / 0\n")
    repo.write("other.py", "X = 2\n")
    return jobs_and_snapshot(commit_scope(repo, rf_home, repo.commit("change")))


def run(
    wire: WireServer,
    protocol: str,
    change: tuple[dict[str, FileJob], Snapshot],
    settings: ReviewSettings | None = None,
    path: str = "app.py",
) -> ChunkResult:
    jobs, snapshot = change
    with sending(wire, protocol) as send:
        return review_chunk(jobs[path], 0, None, snapshot, settings or ReviewSettings(), send)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_multi_round_session_with_every_tool(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        protocol,
        [
            ToolCalls(Call("file_read", {"file_path": "app.py"})),
            ToolCalls(
                Call("code_search", {"search_text": "getcwd", "file_patterns": ["*.py"]}),
                Call("file_find", {"query_name": "b.py"}),
            ),
            ToolCalls(Call("code_comment", {"finding": FINDING})),
            ToolCalls(Call("task_done", {})),
        ],
    )
    result = run(wire, protocol, change)
    wire.assert_done()
    assert result.complete and result.warnings == ()
    assert (result.path, result.chunk, result.chunks, result.tool_calls) == ("app.py", 0, 1, 5)
    (candidate,) = result.candidates
    assert candidate.title == "Division of a path by zero" and candidate.start_line == 4
    assert [r.round for r in result.records] == [1, 2, 3, 4]
    assert [[t.name for t in r.tool_calls] for r in result.records] == [
        ["file_read"],
        ["code_search", "file_find"],
        ["code_comment"],
        ["task_done"],
    ]
    assert all(r.stage == "main" and r.status == "ok" for r in result.records)
    read = result.records[0].tool_calls[0]
    assert read.arguments == {"file_path": "app.py"} and "os.getcwd() / 0" in read.output
    usage, requests = total_usage(result.records)
    assert requests == 4 and usage.completion_tokens == 4 * 7
    bodies = [conversation(r.body) for r in wire.requests()]
    assert "4\\t    return os.getcwd() / 0" in bodies[1]  # the tool result went back
    assert "app.py:4:    return os.getcwd() / 0" in bodies[2]
    assert "lib/b.py" in bodies[2]
    assert "Recorded finding 1" in bodies[3]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_budget_exhaustion_shrinks_the_tool_block_and_cache_hits_are_free(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    read_a = Call("file_read", {"file_path": "lib/a.py"})
    wire.script(
        protocol,
        [
            ToolCalls(read_a),
            ToolCalls(Call("file_read", {"file_path": "lib/a.py", "start_line": 5, "end_line": 9})),
            ToolCalls(Call("file_read", {"file_path": "lib/b.py"})),
            ToolCalls(Call("task_done", {})),
        ],
    )
    result = run(wire, protocol, change, ReviewSettings(max_context_tool_calls=2))
    assert result.complete
    offered = [tool_names(protocol, r.body) for r in wire.requests()]
    full = ["file_read", "code_search", "file_find", "code_comment", "task_done"]
    assert offered == [full, full, full, ["code_comment", "task_done"]]
    assert [r.tool_calls[0].status for r in result.records[:3]] == ["ok", "cached", "ok"]
    assert "5\ta_4 = " in result.records[1].tool_calls[0].output  # real content re-injected


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_text_answer_adds_a_reminder_and_forces_tools(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(protocol, [Text("Looks fine to me."), ToolCalls(Call("task_done", {}))])
    result = run(wire, protocol, change)
    assert result.complete and result.candidates == ()
    first, second = wire.requests()
    assert not forced(protocol, first.body) and forced(protocol, second.body)
    assert "Answer with tool calls only" in conversation(second.body)
    assert "Looks fine to me." in conversation(second.body)


def test_three_empty_answers_before_any_activity_end_incomplete(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script("openai", [Text("a"), Text("b"), Text("c")])
    result = run(wire, "openai", change)
    wire.assert_done()
    assert not result.complete
    assert [w.code for w in result.warnings] == ["tool_loop_empty_limit_reached"]
    assert result.warnings[0].path == "app.py" and len(result.records) == 3


def test_after_activity_one_forced_retry_then_the_turn_ends(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        "anthropic",
        [ToolCalls(Call("file_read", {"file_path": "app.py"})), Text("done"), Text("really")],
    )
    result = run(wire, "anthropic", change)
    wire.assert_done()
    assert result.complete and result.warnings == ()
    assert [forced("anthropic", r.body) for r in wire.requests()] == [False, False, True]


def test_round_limit_ends_incomplete(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        "gemini",
        [
            ToolCalls(Call("file_read", {"file_path": "lib/a.py"})),
            ToolCalls(Call("file_read", {"file_path": "lib/b.py"})),
        ],
    )
    result = run(wire, "gemini", change, ReviewSettings(max_tool_rounds=2))
    wire.assert_done()
    assert not result.complete
    assert [w.code for w in result.warnings] == ["tool_loop_limit_reached"]


def test_malformed_tool_arguments_get_an_error_the_model_reads(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        "openai",
        [ToolCalls(Call("file_read", "{not json")), ToolCalls(Call("task_done", {}))],
    )
    result = run(wire, "openai", change)
    assert result.complete
    assert result.records[0].tool_calls[0].status == "error"
    tool_message = wire.requests()[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and "not a JSON object" in tool_message["content"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failing_provider_makes_the_chunk_incomplete_with_the_error_recorded(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        protocol,
        [ToolCalls(Call("code_comment", {"finding": FINDING})), HttpError(400)],
    )
    result = run(wire, protocol, change)
    assert not result.complete and len(result.candidates) == 1  # kept what it had
    assert [w.code for w in result.warnings] == ["provider_error"]
    failed = result.records[-1]
    assert failed.status == "error" and failed.attempts == 1 and failed.round == 2
    assert "HTTP 400" in (failed.error or "") and "HTTP 400" in result.warnings[0].message


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_system_prompt_and_tool_block_are_byte_identical_across_files(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(protocol, [ToolCalls(Call("task_done", {}))] * 2)
    run(wire, protocol, change, path="app.py")
    run(wire, protocol, change, path="other.py")
    first, second = wire.requests()
    assert prefix(protocol, first) == prefix(protocol, second)
    assert prefix(protocol, first)[0] and prefix(protocol, first)[1]
    assert conversation(first.body) != conversation(second.body)
    system_text = str(prefix(protocol, first)[0])
    assert "app.py" not in system_text and "os.getcwd" not in system_text


def test_usage_of_every_request_is_recorded(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    usage = WireUsage(prompt=100, completion=5, cache_read=80)
    wire.script("anthropic", [ToolCalls(Call("task_done", {}), usage=usage)])
    result = run(wire, "anthropic", change)
    (record,) = result.records
    assert record.usage.cache_read_tokens == 80 and record.usage.completion_tokens == 5
    assert record.finish_reason and record.started_at and record.duration_ms >= 0


def test_a_retried_failure_records_its_attempts(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    jobs, snapshot = change
    wire.script("openai", [HttpError(503)])
    with ProviderPool(wire.settings("openai"), 1) as pool:

        def send(request: ModelRequest) -> ModelResponse:  # as llm_request notes a retry
            try:
                return pool.complete(request)
            except ProviderFailure as failure:
                failure.attempts = 2
                raise

        result = review_chunk(jobs["app.py"], 0, None, snapshot, ReviewSettings(), send)
    (record,) = result.records
    assert (record.status, record.attempts) == ("error", 2)
    assert total_usage(result.records)[1] == 2


def test_results_and_jobs_round_trip_through_json(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    jobs, snapshot = change
    wire.script(
        "gemini", [ToolCalls(Call("code_comment", {"finding": FINDING}), Call("task_done"))]
    )
    result = run(wire, "gemini", change)
    assert ChunkResult.model_validate_json(result.model_dump_json()) == result
    job = jobs["app.py"]
    assert FileJob.model_validate_json(job.model_dump_json()) == job
    assert Snapshot.model_validate_json(snapshot.model_dump_json()) == snapshot


def test_a_chunk_whose_findings_all_had_invalid_arguments_is_incomplete(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    """The model meant to report two findings, but put their fields outside `finding`: each
    call is told why, and the chunk does not claim a complete review with nothing found."""
    flat = Call("code_comment", {**FINDING})
    wire.script(
        "openai",
        [ToolCalls(flat, flat), ToolCalls(Call("task_done", {}))],
    )
    result = run(wire, "openai", change)
    assert not result.complete and result.candidates == ()
    (warning,) = result.warnings
    assert (warning.code, warning.path) == ("code_comment_invalid", "app.py")
    assert warning.message == (
        "chunk 1/1: no finding could be recorded: all 2 code_comment calls had invalid arguments"
    )
    assert [c.status for c in result.records[0].tool_calls] == ["error", "error"]
    assert "needs a 'finding' object" in wire.requests()[1].body["messages"][-1]["content"]


def test_some_invalid_findings_warn_and_keep_the_valid_ones(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(
        "openai",
        [
            ToolCalls(
                Call("code_comment", {**FINDING}), Call("code_comment", {"finding": FINDING})
            ),
            ToolCalls(Call("task_done", {})),
        ],
    )
    result = run(wire, "openai", change)
    assert result.complete and len(result.candidates) == 1
    (warning,) = result.warnings
    assert warning.code == "code_comment_rejected"
    assert (
        warning.message
        == "chunk 1/1: 1 of 2 code_comment calls had invalid arguments (not recorded)"
    )
