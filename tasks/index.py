"""Stage 2b, index_context: the code index of the new side and every kept file's context pack
(`review.context`). No cache policy: the index store is the cache (a blob is parsed once, ever);
retries 0: a Git or store error is the review's, at once. Runs in the flow's process, which
reads the repository, and loads the index once for every file; a CLI review hands it the packs
its estimate counted, so the index is loaded once per review."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from reviewflow.config import ReviewSettings
from reviewflow.review.packs import FileContext, context_packs
from reviewflow.review.reader import Snapshot
from reviewflow.select.scope import Scope

PROGRESS_FROM = 500
"""Blobs to parse from which the build logs its progress (every tenth)."""


@task(name="index_context", cache_policy=NO_CACHE, retries=0)
def index_context(
    scope: Scope,
    snapshot: Snapshot,
    settings: ReviewSettings,
    home: str,
    handed: dict[str, FileContext] | None = None,
) -> dict[str, FileContext]:
    """Every kept file's context pack: path -> its rendered text and tokens; `handed`, those
    the CLI made for its estimate, returned as they are (the index is not loaded twice)."""
    if handed is not None:
        return handed
    logger = get_run_logger()

    def progress(done: int, total: int) -> None:
        if total >= PROGRESS_FROM and (done == total or done % max(1, total // 10) == 0):
            logger.info("code index: %d of %d files parsed", done, total)

    packs = context_packs(scope, snapshot, settings, home, progress)
    logger.info(
        "context packs: %d files, %d tokens", len(packs), sum(p.tokens for p in packs.values())
    )
    return packs
