"""Stage 4, tool loop: one session of the model with read-only tools over one chunk."""

from __future__ import annotations

from prefect import task
from prefect.logging import get_run_logger

from reviewflow.config import ReviewSettings
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.jobs import FileJob
from reviewflow.review.loop import review_chunk
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import ChunkResult, PlanResult, attributed
from reviewflow.review.symbols import SymbolSource, symbol_loader
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="tool_loop",
    cache_key_fn=stage_cache_key,  # + the snapshot identity the tools read (tasks/caching.py)
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def tool_loop(
    job: FileJob,
    chunk: int,
    plan: PlanResult,
    snapshot: Snapshot,
    snapshot_id: str,
    settings: ReviewSettings,
    handle: ProviderHandle,
    symbols: SymbolSource | None = None,
) -> ChunkResult:
    """The candidates the model proposes for chunk `chunk` of `job`'s file.

    `snapshot_id` identifies every file the tools can read; it is here for the cache key.
    `symbols`: where the symbol tools find the code index (None: they are not offered); the
    run's log says where it was loaded from on the first symbol call.
    """
    send = sender(handle, job.path)
    loader = symbol_loader(symbols, snapshot, get_run_logger().info if symbols else None)
    found = review_chunk(job, chunk, plan.guidance, snapshot, settings, send, loader)
    return attributed(found, handle.model)
