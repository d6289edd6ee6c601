"""The team's instructions in the prompts: in the plan and main system prompts of every file,
never in a user message; and in those stages' cache keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.request import ReviewRequest
from reviewflow.review import templates
from reviewflow.review.jobs import FileJob, file_jobs
from reviewflow.review.loop import review_chunk
from reviewflow.review.plan import plan_file
from reviewflow.review.reader import Snapshot
from reviewflow.select.scope import collect, select
from tasks.caching import stage_key
from tests.gitutil import GitRepo
from tests.review.helpers import conversation, prefix, sending, simple_job
from tests.wire_server import PROTOCOLS, Call, Text, ToolCalls, WireServer

TEAM = "Every SQL query must go through db.safe_query(); flag raw cursor.execute calls."


def with_instructions(job: FileJob, text: str | None = TEAM) -> FileJob:
    return job.model_copy(update={"instructions": text})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_instructions_go_into_the_system_prompts_and_never_the_user_message(
    wire: WireServer, protocol: str, tmp_path: Path
) -> None:
    job = with_instructions(simple_job(changed=80))  # planned: both stages see them
    wire.script(protocol, [Text("Look at the queries."), ToolCalls(Call("task_done"))])
    with sending(wire, protocol) as send:
        plan = plan_file(job, send)
        review_chunk(
            job, 0, plan.guidance, Snapshot(repo_root=str(tmp_path)), ReviewSettings(), send
        )
    for request in wire.requests(protocol):
        system = str(prefix(protocol, request)[0])
        assert TEAM in system and "<team-instructions>" in system
        rest = [m for m in request.body.get("messages", []) if m.get("role") != "system"]
        talk = conversation({"messages": rest} if rest else request.body)
        assert TEAM not in talk
        assert "Check error handling." in talk  # the file's rule stays in the user message


def test_the_system_prompt_is_unchanged_without_instructions() -> None:
    assert templates.system("main", None) == templates.system("main")
    assert templates.system("main", "") == templates.system("main")
    marked = templates.system("main", TEAM)
    assert marked.startswith(templates.system("main").rstrip())
    assert marked.rstrip().endswith(f"<team-instructions>\n{TEAM}\n</team-instructions>")
    assert "from the team, not from the change" in marked


def test_every_file_job_carries_the_scope_instructions(repo: GitRepo, rf_home: Path) -> None:
    repo.write("a.py", "x = 1\n")
    repo.write("b.go", "package b\n")
    repo.write("team.md", f"{TEAM}\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    repo.write("b.go", "package b // changed\n")
    request = ReviewRequest.from_flags(str(repo.root), home=str(rf_home))
    scope = select(collect(request, 3), request, 1 << 20, "team.md")
    jobs = file_jobs(scope, ReviewSettings(), "en-US")
    assert [(job.path, job.instructions) for job in jobs] == [("a.py", TEAM), ("b.go", TEAM)]
    plain = select(collect(request, 3), request, 1 << 20)
    assert {job.instructions for job in file_jobs(plain, ReviewSettings(), "en-US")} == {None}


def key(task: str, **parameters: Any) -> str:
    """A model stage's cache key, as `stage_cache_key` computes it."""
    return stage_key(task, parameters)


@pytest.mark.parametrize("task", ["plan", "tool_loop"])
def test_the_instructions_are_part_of_the_stage_cache_keys(task: str) -> None:
    job = simple_job(changed=80)
    edited = TEAM.replace("safe_query", "checked_query")
    keys = {
        text: key(task, job=with_instructions(job, text), chunk=0) for text in (None, TEAM, edited)
    }
    assert len(set(keys.values())) == 3  # added or edited instructions: asked again
    assert key(task, job=with_instructions(job), chunk=0) == keys[TEAM]  # unchanged: reused
