"""Stage 7, finalize: revalidate, apply the confidence threshold, fingerprint and deduplicate;
with several passes, each pass's findings finalized, then their agreement."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.findings.agreement import agree
from reviewflow.findings.finalize import Finalized, finalize
from reviewflow.findings.models import FileFindings


@task(name="finalize", cache_policy=NO_CACHE, retries=0)  # deterministic and cheap: no cache
def finalize_findings(passes: list[list[FileFindings]], settings: ReviewSettings) -> Finalized:
    """The review's findings and every dropped candidate with its reason, from every pass's
    files (one pass: as a review without passes)."""
    if len(passes) == 1:
        return finalize(passes[0], settings)
    return agree([finalize(files, settings) for files in passes], settings)
