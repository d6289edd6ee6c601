"""Stage 5, relocate: place each candidate on real changed lines (a tool-free request for the
ones whose code cannot be found deterministically)."""

from __future__ import annotations

from prefect import task

from reviewflow.findings.models import FileFindings
from reviewflow.findings.relocate import group_candidates, relocate_file
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.records import ChunkResult, attributed
from reviewflow.select.reviewed import ReviewedFiles
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="relocate",
    cache_key_fn=stage_cache_key,
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def relocate(
    chunks: list[ChunkResult], reviewed: ReviewedFiles, handle: ProviderHandle
) -> list[FileFindings]:
    """One file's candidates (from all its chunks), grouped by the file they name and placed.

    A candidate naming a file outside the change is dropped here, with its reason.
    """
    candidates = [candidate for chunk in chunks for candidate in chunk.candidates]
    groups, dropped = group_candidates(candidates, reviewed.files)
    send = sender(handle)
    placed = [relocate_file(reviewed.files[path], group, send) for path, group in groups.items()]
    if dropped:
        path = chunks[0].path if chunks else None
        placed.append(FileFindings(path=path, dropped=tuple(dropped)))
    return attributed(placed, handle.model)
