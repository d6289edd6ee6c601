"""Shared helpers for the engine tests: scopes from real repositories, sends, wire bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reviewflow.config import ReviewSettings
from reviewflow.providers import ProviderPool
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import Chunk, FileJob, file_jobs, snapshot_of
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import Send
from reviewflow.select.scope import Scope, collect, select
from tests.gitutil import GitRepo
from tests.wire_server import RecordedRequest, WireServer

SETTINGS = ReviewSettings()


def commit_scope(repo: GitRepo, home: Path, sha: str) -> Scope:
    """The scope of reviewing commit `sha` of `repo`."""
    request = ReviewRequest.from_flags(str(repo.root), commit=sha, home=str(home))
    return select(collect(request, SETTINGS.context_lines), request, SETTINGS.max_file_bytes)


def workspace_scope(repo: GitRepo, home: Path) -> Scope:
    request = ReviewRequest.from_flags(str(repo.root), home=str(home))
    return select(collect(request, SETTINGS.context_lines), request, SETTINGS.max_file_bytes)


def jobs_and_snapshot(
    scope: Scope, settings: ReviewSettings = SETTINGS
) -> tuple[dict[str, FileJob], Snapshot]:
    jobs = file_jobs(scope, settings, "en-US")
    return {job.path: job for job in jobs}, snapshot_of(scope)


def simple_job(path: str = "app.py", changed: int = 4, text: str = "   1 +x = 1") -> FileJob:
    """A job with one chunk, for tests that do not need a repository diff."""
    chunk = Chunk(index=0, count=1, text=text, changed_lines=changed)
    return FileJob(
        path=path,
        status="modified",
        changed_lines=changed,
        chunks=(chunk,),
        rule="Check error handling.",
        rule_label="custom:rules.json:**",
        language="en-US",
    )


@contextmanager
def sending(wire: WireServer, protocol: str) -> Iterator[Send]:
    """A Send through a provider pool pointed at the wire server."""
    with ProviderPool(wire.settings(protocol), 2) as pool:
        yield pool.complete


def tool_names(protocol: str, body: dict[str, Any]) -> list[str]:
    """The tool names a recorded request offered."""
    tools = body.get("tools") or []
    if protocol == "openai":
        return [tool["function"]["name"] for tool in tools]
    if protocol == "anthropic":
        return [tool["name"] for tool in tools]
    return [d["name"] for group in tools for d in group.get("functionDeclarations", [])]


def forced(protocol: str, body: dict[str, Any]) -> bool:
    """Whether a recorded request forced a tool call."""
    if protocol == "openai":
        return bool(body.get("tool_choice") == "required")
    if protocol == "anthropic":
        return bool(body.get("tool_choice") == {"type": "any"})
    return bool(body.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode") == "ANY")


def prefix(protocol: str, request: RecordedRequest) -> tuple[Any, Any]:
    """The shared prefix of a recorded request: its system prompt and its tool block."""
    body = request.body
    if protocol == "openai":
        return body["messages"][0], body.get("tools")
    if protocol == "anthropic":
        return body.get("system"), body.get("tools")
    return body.get("systemInstruction"), body.get("tools")


def conversation(body: dict[str, Any]) -> str:
    """A recorded request's conversation as JSON text, for content assertions."""
    return json.dumps(body.get("messages") or body.get("contents"), ensure_ascii=False)
