"""Stage 7a, verify (`--verify`): one finding's Chain-of-Verification, one task run per finding."""

from __future__ import annotations

from prefect import task
from prefect.logging import get_run_logger

from reviewflow.findings.models import Finding
from reviewflow.findings.verify import Verification, verify
from reviewflow.providers.pool import ProviderHandle
from reviewflow.review.reader import Snapshot
from reviewflow.review.records import attributed
from reviewflow.review.symbols import SymbolSource, symbol_loader
from tasks.caching import stage_cache_key
from tasks.llm import cancellable, sender


@task(
    name="verify",
    cache_key_fn=stage_cache_key,  # + the snapshot identity the tools read (tasks/caching.py)
    persist_result=True,
    result_serializer="json",
    retries=0,  # each model request is retried inside it (`tasks.llm.llm_request`)
)
@cancellable
def verify_finding(
    finding: Finding,
    snapshot: Snapshot,
    snapshot_id: str,
    budget: int,
    handle: ProviderHandle,
    symbols: SymbolSource | None = None,
) -> Verification:
    """The verification of `finding` by `handle`'s model (the verify model), its answers read
    from `snapshot` with at most `budget` context calls.

    `snapshot_id` identifies every file the tools can read; it is here for the cache key.
    `symbols`: where the symbol tools find the code index, the tool loops' own (None: they are
    not offered); the run's log says where it was loaded from on the first symbol call.
    """
    loader = symbol_loader(symbols, snapshot, get_run_logger().info if symbols else None)
    return attributed(verify(finding, snapshot, budget, sender(handle), loader), handle.model)
