"""The estimate of one review, from its scope or its file jobs, as the preview, the CLI and the
flow make it (the same function, so the three agree)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reviewflow.config import Config
from reviewflow.cost.estimate import estimate_review
from reviewflow.cost.prices import price_of
from reviewflow.cost.sizes import file_sizes
from reviewflow.cost.text import estimate_record
from reviewflow.review.jobs import FileJob, file_jobs, snapshot_of
from reviewflow.review.reader import Snapshot
from reviewflow.sast.models import SastScan
from reviewflow.select.scope import Scope


def jobs_estimate(jobs: Sequence[FileJob], snapshot: Snapshot, config: Config) -> dict[str, Any]:
    """The `estimate` object of a review of `jobs`, whose tools read `snapshot`."""
    sizes = file_sizes(snapshot, [job.path for job in jobs])
    estimate = estimate_review(
        jobs, sizes, config.review, config.output.language, price_of(config.model)
    )
    return estimate_record(estimate, config.model, config.review)


def scope_estimate(scope: Scope, config: Config, sast: SastScan | None = None) -> dict[str, Any]:
    """The `estimate` object of a review of `scope` (chunked as the review will chunk it)."""
    jobs = file_jobs(scope, config.review, config.output.language, sast)
    return jobs_estimate(jobs, snapshot_of(scope), config)
