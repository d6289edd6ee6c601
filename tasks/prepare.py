"""Stages 1 and 2, prepare_review: the change read from Git (or the given diff), its rules
loaded (from the trusted ref in CI) and its files kept or left out."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import Scope, prepare


@task(name="prepare_review", cache_policy=NO_CACHE, retries=0)
def prepare_review(
    request: ReviewRequest, settings: ReviewSettings, handed: Scope | None = None
) -> Scope:
    """The front half as the CLI prepared it (`handed`), or prepared here; Git and rule errors
    fail the task (and the review) at once."""
    return handed if handed is not None else prepare(request, settings)
