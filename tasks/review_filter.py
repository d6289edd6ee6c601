"""Stage 6, review filter: a tool-free request may delete candidates the diff disproves."""

from __future__ import annotations

from prefect import task

from reviewflow.findings.filter import filter_file
from reviewflow.findings.models import FileFindings
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.records import attributed
from reviewflow.select.reviewed import ReviewedFiles
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="review_filter",
    cache_key_fn=stage_cache_key,
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def review_filter(
    found: list[FileFindings], reviewed: ReviewedFiles, handle: ProviderHandle
) -> list[FileFindings]:
    """Each file's placed candidates after the filter (drops-only entries pass through)."""
    send = sender(handle)
    filtered = [
        filter_file(reviewed.files[item.path], item, send) if item.placed and item.path else item
        for item in found
    ]
    return attributed(filtered, handle.model)
