"""Stage 1, collect_diff: read the change from Git (or the given diff)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.git.identity import snapshot_identity
from reviewflow.git.models import Change
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import collect


@task(name="collect_diff", cache_policy=NO_CACHE, retries=0)
def collect_diff(request: ReviewRequest, context_lines: int) -> Change:
    """Read the requested change; Git errors fail the task (and the review) at once."""
    return collect(request, context_lines)


@task(name="identify_snapshot", cache_policy=NO_CACHE, retries=0)
def identify_snapshot(change: Change) -> str:
    """One hash of every file the tools can read (part of the model stages' cache keys)."""
    return snapshot_identity(change.repo_root, change.snapshot_ref)
