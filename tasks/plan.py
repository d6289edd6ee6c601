"""Stage 3, plan: one tool-free request for a file with at least 50 changed lines."""

from __future__ import annotations

from prefect import task

from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.jobs import FileJob
from reviewflow.review.plan import plan_file
from reviewflow.review.records import PlanResult, attributed
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="plan",
    cache_key_fn=stage_cache_key,  # the file's change, rule, model, templates (tasks/caching.py)
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def plan(job: FileJob, handle: ProviderHandle) -> PlanResult:
    """Guidance for the file's tool loop (None, and no request, below 50 changed lines)."""
    return attributed(plan_file(job, sender(handle, job.path)), handle.model)
