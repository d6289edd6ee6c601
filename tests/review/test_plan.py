"""The plan request: its failure path, and its guidance in the file's main request."""

from __future__ import annotations

from pathlib import Path

from reviewflow.config import ReviewSettings
from reviewflow.review.loop import review_chunk
from reviewflow.review.plan import plan_file
from reviewflow.review.reader import Snapshot
from tests.review.helpers import conversation, prefix, sending, simple_job
from tests.wire_server import Call, HttpError, Text, ToolCalls, WireServer


def test_a_failed_plan_is_incomplete_with_the_error_recorded(wire: WireServer) -> None:
    wire.script("gemini", [HttpError(401)])
    with sending(wire, "gemini") as send:
        result = plan_file(simple_job(changed=80), send)
    assert not result.complete and result.guidance is None
    (warning,) = result.warnings
    assert warning.code == "plan_failed" and "HTTP 401" in warning.message
    (record,) = result.records
    assert (record.stage, record.status, record.attempts) == ("plan", "error", 1)


def test_guidance_goes_into_the_main_request_as_untrusted_user_data(
    wire: WireServer, tmp_path: Path
) -> None:
    job = simple_job(changed=80)
    wire.script("openai", [Text("Look at the loop bounds."), ToolCalls(Call("task_done"))])
    with sending(wire, "openai") as send:
        plan = plan_file(job, send)
        snapshot = Snapshot(repo_root=str(tmp_path))
        review_chunk(job, 0, plan.guidance, snapshot, ReviewSettings(), send)
    plan_request, main_request = wire.requests()
    user = main_request.body["messages"][1]["content"]
    assert '<untrusted-data label="plan guidance">' in user
    assert "Look at the loop bounds." in user
    assert "Look at the loop bounds." not in str(prefix("openai", main_request))
    assert "Check error handling." in conversation(plan_request.body)
