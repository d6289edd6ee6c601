"""Stage 8, localize: one tool-free batch rewrites the findings' text in `output.language`."""

from __future__ import annotations

from prefect import task

from reviewflow.findings.localize import Localized, localize
from reviewflow.findings.models import Finding
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.records import attributed
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="localize",
    cache_key_fn=stage_cache_key,
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def localize_findings(findings: list[Finding], language: str, handle: ProviderHandle) -> Localized:
    """The findings with title, problem, evidence and suggestion in `language` (English: as is)."""
    return attributed(localize(findings, language, sender(handle)), handle.model)
