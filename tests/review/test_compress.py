"""Compression before a main request at 60% of max_chunk_tokens, and its failure paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.review.jobs import FileJob
from reviewflow.review.loop import review_chunk
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import ChunkResult, total_usage
from tests.gitutil import GitRepo
from tests.review.helpers import commit_scope, conversation, jobs_and_snapshot, sending, tool_names
from tests.wire_server import PROTOCOLS, Call, HttpError, Reply, Text, ToolCalls, WireServer

SETTINGS = ReviewSettings(max_chunk_tokens=4000)  # compression from 2400, guard at 3200 tokens
SUMMARY = "lib/a.py defines a_0..a_39 as padded strings; nothing suspicious."


@pytest.fixture
def change(repo: GitRepo, rf_home: Path) -> tuple[dict[str, FileJob], Snapshot]:
    for name in ("a", "b", "c"):
        repo.write(f"lib/{name}.py", "".join(f"{name}_{i} = '{i:>40}'\n" for i in range(40)))
    repo.write("lib/huge.py", "".join(f"h_{i} = '{i:>60}'\n" for i in range(100)))
    repo.write("app.py", "import os\n")
    rule = {"path": "**/*.py", "rule": "Check imports."}  # short: the Python system rule is 6 KB
    repo.write(".reviewflow/rules.json", json.dumps({"rules": [rule]}))
    repo.commit("base")
    repo.write("app.py", "import os\nimport sys\n")
    return jobs_and_snapshot(commit_scope(repo, rf_home, repo.commit("change")))


def reads(*names: str) -> list[Reply]:
    return [ToolCalls(Call("file_read", {"file_path": f"lib/{name}.py"})) for name in names]


Change = tuple[dict[str, FileJob], Snapshot]


def run(wire: WireServer, protocol: str, change: Change) -> ChunkResult:
    jobs, snapshot = change
    with sending(wire, protocol) as send:
        return review_chunk(jobs["app.py"], 0, None, snapshot, SETTINGS, send)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_older_rounds_are_summarized_and_the_newest_two_kept(
    wire: WireServer, protocol: str, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script(protocol, [*reads("a", "b", "c"), Text(SUMMARY), ToolCalls(Call("task_done"))])
    result = run(wire, protocol, change)
    assert result.warnings == ()
    wire.assert_done()
    assert result.complete
    assert [r.stage for r in result.records] == ["main", "main", "main", "compress", "main"]
    compress_request, final = wire.requests()[3:]
    assert tool_names(protocol, compress_request.body) == []
    sent = conversation(compress_request.body)
    assert '\\"tool\\": \\"file_read\\"' in sent and "a_7 = " in sent  # round 1, as JSON
    assert "b_7 = " not in sent  # the newest two rounds are not summarized
    kept = conversation(final.body)
    assert "<previous_review_summary>" in kept and SUMMARY in kept
    assert "a_7 = " not in kept and "b_7 = " in kept and "c_7 = " in kept
    assert "Context calls available" in kept  # the first user message stays
    usage, requests = total_usage(result.records)
    assert requests == 5 and usage.prompt_tokens == 5 * 12


def test_kept_rounds_keep_their_tool_call_ids(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script("openai", [*reads("a", "b", "c"), Text(SUMMARY), ToolCalls(Call("task_done"))])
    result = run(wire, "openai", change)
    messages = wire.requests()[4].body["messages"]
    calls = [c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert len(calls) == 2 and calls == answers
    original = [record.tool_calls[0].id for record in result.records[1:3]]
    assert calls == original  # rounds 2 and 3, as the model named them


def test_an_unusually_large_early_result_allows_compression_before_three_rounds(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script("anthropic", [*reads("huge"), Text(SUMMARY), ToolCalls(Call("task_done"))])
    result = run(wire, "anthropic", change)
    wire.assert_done()
    assert [r.stage for r in result.records] == ["main", "compress", "main"]
    final = conversation(wire.requests()[2].body)
    assert SUMMARY in final and "h_7 = " not in final


def test_a_failed_compression_keeps_the_messages_and_is_not_retried(
    wire: WireServer, change: tuple[dict[str, FileJob], Snapshot]
) -> None:
    wire.script("openai", [*reads("a", "b", "c"), HttpError(400), *reads("a", "b")])
    result = run(wire, "openai", change)
    wire.assert_done()
    assert [r.stage for r in result.records] == ["main"] * 3 + ["compress"] + ["main"] * 2
    assert result.records[3].status == "error"
    assert [w.code for w in result.warnings] == ["compression_failed", "token_limit_reached"]
    assert not result.complete
    assert "a_7 = " in conversation(wire.requests()[4].body)  # original messages kept


@pytest.mark.parametrize(
    ("reply", "problem"),
    [(Text("x" * 20_000), "did not shrink"), (Text("   "), "empty summary")],
)
def test_an_empty_or_larger_summary_is_refused(
    wire: WireServer,
    change: tuple[dict[str, FileJob], Snapshot],
    reply: Reply,
    problem: str,
) -> None:
    wire.script("gemini", [*reads("a", "b", "c"), reply, ToolCalls(Call("task_done"))])
    result = run(wire, "gemini", change)
    wire.assert_done()
    assert result.complete
    (warning,) = result.warnings
    assert warning.code == "compression_failed" and problem in warning.message
    assert "<previous_review_summary>" not in conversation(wire.requests()[4].body)
