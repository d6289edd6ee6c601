"""The tool-free plan of a file with at least 50 changed lines: guidance for its main requests."""

from __future__ import annotations

from reviewflow.models import ReviewWarning
from reviewflow.providers.messages import ModelRequest, ToolChoice, UserMessage
from reviewflow.review import templates
from reviewflow.review.jobs import FileJob
from reviewflow.review.recording import Where, bounded, send_recorded
from reviewflow.review.records import PlanResult, Send

MAX_GUIDANCE_CHARS = 2000


def plan_request(job: FileJob) -> ModelRequest:
    """The plan request for `job` (no tools)."""
    return ModelRequest(
        system=templates.system("plan", job.instructions),
        messages=(UserMessage(content=templates.plan_user(job)),),
        tool_choice=ToolChoice.AUTO,
    )


def plan_file(job: FileJob, send: Send) -> PlanResult:
    """Guidance for `job`'s main requests; None and no request below 50 changed lines.

    A failed plan makes the file incomplete (with a warning); its chunks can still be reviewed
    without guidance.
    """
    if not job.needs_plan:
        return PlanResult(path=job.path)
    response, record = send_recorded(send, plan_request(job), Where("plan", job.path))
    if response is None:
        warning = ReviewWarning("plan_failed", f"plan request failed: {record.error}", job.path)
        return PlanResult(path=job.path, complete=False, warnings=(warning,), records=(record,))
    guidance = bounded(response.text.strip(), MAX_GUIDANCE_CHARS) or None
    return PlanResult(path=job.path, guidance=guidance, records=(record,))
