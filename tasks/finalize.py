"""Stage 7, finalize: revalidate, apply the confidence threshold, fingerprint and deduplicate."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.findings.finalize import Finalized, finalize
from reviewflow.findings.models import FileFindings


@task(name="finalize", cache_policy=NO_CACHE, retries=0)  # deterministic and cheap: no cache
def finalize_findings(files: list[FileFindings], settings: ReviewSettings) -> Finalized:
    """The review's findings and every dropped candidate with its reason."""
    return finalize(files, settings)
