"""Stage 2, select_files: load the rules (trusted ref in CI) and filter the changed files."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.git.models import Change
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import Scope, select


@task(name="select_files", cache_policy=NO_CACHE, retries=0)
def select_files(
    change: Change, request: ReviewRequest, max_file_bytes: int, instructions: str | None = None
) -> Scope:
    """Resolve rules and instructions and keep or exclude each file (home and CI state come on
    the request)."""
    return select(change, request, max_file_bytes, instructions)
