"""identify_snapshot: one hash of what the tools of a review can read; ship_snapshot: that
snapshot put where workers that cannot see the repository read it (`review.shared_store`)."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.git.identity import snapshot_identity
from reviewflow.review.jobs import snapshot_of
from reviewflow.review.reader import Snapshot, ship
from reviewflow.select.scope import Scope


@task(name="identify_snapshot", cache_policy=NO_CACHE, retries=0)
def identify_snapshot(scope: Scope) -> tuple[Snapshot, str]:
    """What the tools read (the change's new side) and one hash of every file in it (part of
    the model stages' cache keys)."""
    change = scope.change
    return snapshot_of(scope), snapshot_identity(change.repo_root, change.snapshot_ref)


@task(name="ship_snapshot", cache_policy=NO_CACHE, retries=0)  # written once per tree anyway
def ship_snapshot(snapshot: Snapshot, store: str) -> Snapshot:
    """The snapshot as a Git bundle in the shared `store`, which the workers clone once."""
    return ship(snapshot, Path(store))
