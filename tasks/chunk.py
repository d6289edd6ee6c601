"""Stage 3a, chunk: each kept file's hunks cut into chunks of at most `max_chunk_tokens`, with
its context pack (stage 2b, `tasks.index`)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.review.jobs import FileJob, file_jobs
from reviewflow.review.packs import FileContext
from reviewflow.sast.models import SastScan
from reviewflow.select.scope import Scope


@task(name="chunk_files", cache_policy=NO_CACHE, retries=0)  # deterministic and cheap
def chunk_files(
    scope: Scope,
    settings: ReviewSettings,
    language: str,
    sast: SastScan | None = None,
    packs: dict[str, FileContext] | None = None,
) -> list[FileJob]:
    """One job per kept file: its chunks, its rule, the output language, its SAST results,
    its context pack."""
    return file_jobs(scope, settings, language, sast, packs)
