"""identify_snapshot: one hash of what the tools of a review can read."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.git.identity import snapshot_identity
from reviewflow.git.models import Change


@task(name="identify_snapshot", cache_policy=NO_CACHE, retries=0)
def identify_snapshot(change: Change) -> str:
    """One hash of every file the tools can read (part of the model stages' cache keys)."""
    return snapshot_identity(change.repo_root, change.snapshot_ref)
