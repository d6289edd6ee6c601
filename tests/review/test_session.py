"""One session's tools: budget tiers, cache hits that cost nothing, errors the model can read."""

from __future__ import annotations

import pytest

from reviewflow.providers.messages import ToolCall
from reviewflow.review.reader import Snapshot
from reviewflow.review.session import ToolSession, context_budget
from tests.gitutil import GitRepo


def call(name: str, n: int = 0, **arguments: object) -> ToolCall:
    return ToolCall(id=f"call-{name}-{n}", name=name, arguments=arguments)


@pytest.fixture
def session(repo: GitRepo) -> ToolSession:
    repo.write("app.py", "".join(f"line_{i} = {i}\n" for i in range(1, 701)))
    repo.write("lib/util.py", "def util():\n    return 'needle'\n")
    sha = repo.commit("base")
    return ToolSession(Snapshot(repo_root=str(repo.root), ref=sha), "app.py", 0, budget=3)


@pytest.mark.parametrize(
    ("changed", "maximum", "budget"),
    [(1, 10, 6), (10, 10, 6), (11, 10, 8), (50, 10, 8), (51, 10, 10), (51, 20, 20), (5, 4, 4)],
)
def test_context_budget_tiers(changed: int, maximum: int, budget: int) -> None:
    assert context_budget(changed, maximum) == budget


def test_identical_calls_and_covered_reads_hit_the_cache_without_cost(
    session: ToolSession,
) -> None:
    first = session.run(call("file_read", 1, file_path="app.py", start_line=1, end_line=200))
    assert first.record.status == "ok" and session.used == 1
    inside = session.run(call("file_read", 2, file_path="./app.py", start_line=50, end_line=60))
    assert inside.record.status == "cached" and session.used == 1
    assert inside.message.content.splitlines()[1] == "50\tline_50 = 50"  # the real content
    assert len(inside.message.content.splitlines()) == 12
    beyond = session.run(call("file_read", 3, file_path="app.py", start_line=150, end_line=260))
    assert beyond.record.status == "ok" and session.used == 2
    search = {"search_text": "needle"}
    assert session.run(call("code_search", 4, **search)).record.status == "ok"
    again = session.run(call("code_search", 5, **search))
    assert again.record.status == "cached" and "lib/util.py:2:" in again.message.content
    assert session.used == 3 and not session.context_allowed


def test_a_spent_budget_refuses_new_context_calls_but_still_serves_the_cache(
    session: ToolSession,
) -> None:
    for n, name in enumerate(["app.py", "lib/util.py"]):
        session.run(call("file_read", n, file_path=name))
    session.run(call("file_find", 9, query_name="util"))
    refused = session.run(call("code_search", 10, search_text="x"))
    assert refused.message.is_error and "budget of 3 calls is spent" in refused.message.content
    assert not refused.valid
    cached = session.run(call("file_read", 11, file_path="lib/util.py", start_line=2))
    assert cached.record.status == "cached" and "2\t    return 'needle'" in cached.message.content


def test_malformed_arguments_become_tool_errors(session: ToolSession) -> None:
    broken = ToolCall(id="c1", name="file_read", arguments_error="Expecting value: line 1")
    outcomes = [
        session.run(broken),
        session.run(call("file_read", 2)),
        session.run(call("file_read", 3, file_path="app.py", start_line="ten")),
        session.run(call("file_read", 4, file_path="app.py", start_line=9, end_line=3)),
        session.run(call("code_search", 5, search_text="")),
        session.run(call("shell", 6, command="rm -rf /")),
        session.run(call("file_read", 7, file_path="/etc/passwd")),
        session.run(call("code_search", 8, search_text="x", file_patterns=["../etc"])),
    ]
    for outcome in outcomes:
        assert outcome.message.is_error and outcome.record.status == "error"
        assert outcome.message.content.startswith("error: ")
    contents = [o.message.content for o in outcomes]
    assert "not a JSON object" in contents[0]
    assert "file_path: Field required" in contents[1]
    assert "start_line" in contents[2]
    assert "unknown tool 'shell'" in contents[5] and "task_done" in contents[5]
    assert "absolute" in contents[6]
    assert "pathspec '../etc' leaves the repository" in contents[7]
    assert session.used == 0  # refused calls cost no budget


def test_code_comment_collects_the_candidate_as_given(session: ToolSession) -> None:
    finding = {
        "severity": "HIGH",
        "category": "bug",
        "file": "app.py",
        "start_line": "12",
        "end_line": 13.0,
        "existing_code": "line_12 = 12",
        "title": "Off by one",
        "problem": "p",
        "evidence": 7,
        "suggestion": "s",
        "confidence": "0.9",
    }
    outcome = session.run(call("code_comment", 1, finding=finding))
    assert outcome.valid and outcome.message.content == "Recorded finding 1: Off by one."
    (candidate,) = session.candidates
    assert (candidate.path, candidate.file, candidate.severity, candidate.category) == (
        "app.py",
        "app.py",
        "HIGH",
        "bug",
    )
    assert (candidate.start_line, candidate.end_line) == (12, 13)
    assert candidate.evidence == "" and candidate.confidence is None and candidate.chunk == 0
    shapeless = session.run(call("code_comment", 2, severity="high", title="flat"))
    assert shapeless.message.is_error and "'finding' object" in shapeless.message.content
    assert len(session.candidates) == 1 and session.used == 0


def test_task_done_ends_the_session(session: ToolSession) -> None:
    outcome = session.run(call("task_done", 1))
    assert outcome.done and outcome.valid and session.calls == 1
