"""Stage 3b, estimate: what the review is expected to cost, before its first model request."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import Config
from reviewflow.cost.review import jobs_estimate
from reviewflow.review.jobs import FileJob
from reviewflow.review.reader import Snapshot


@task(name="estimate_cost", cache_policy=NO_CACHE, retries=0)  # deterministic and cheap
def estimate_cost(jobs: list[FileJob], snapshot: Snapshot, config: Config) -> dict[str, Any]:
    """The `estimate` object of the report: requests, tokens and money, per file and stage."""
    return jobs_estimate(jobs, snapshot, config)
