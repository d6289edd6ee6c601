"""The verification stage of a review (`--verify`), wired: one `verify` task run per finding,
submitted together (the task runner's `review.concurrency` workers and the provider pool's slots
bound them), then the scores applied to the findings."""

from __future__ import annotations

from typing import Any

from prefect.futures import PrefectFuture

from flows.runners import submitted
from flows.stages import abandon, finished_result
from reviewflow import cancel
from reviewflow.config import Config
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.stages import CANCELLED, ModelStages
from reviewflow.findings.verify import Verification, apply_verifications
from reviewflow.providers.pool import ProviderHandle, pool_for
from reviewflow.review.reader import Snapshot
from reviewflow.review.symbols import SymbolSource
from tasks.verify import verify_finding


def run_verification(
    stages: ModelStages,
    finalized: Finalized,
    snapshot: tuple[Snapshot, str],
    config: Config,
    handle: ProviderHandle,
    options: dict[str, Any],
    symbols: SymbolSource | None = None,
) -> tuple[Finalized, int]:
    """The findings after verification (as they are when `review.verify` is off, or after a
    cancel before it), and the requests sent that no record holds (after Ctrl-C here).

    `snapshot` is what the tools read and its identity (for the cache key); `symbols`, where
    the symbol tools find the code index, as the tool loops do (None: not offered)."""
    settings = config.review
    if not settings.verify or not finalized.findings or stages.cancelled or cancel.requested():
        return finalized, 0
    verifier = pool_for(handle).for_model(settings.verify_model or handle.model)
    task, wrap = verify_finding.with_options(**options), submitted(config)
    futures = [
        task.submit(
            wrap(finding),
            wrap(snapshot[0]),
            snapshot[1],
            settings.verify_budget,
            wrap(verifier),
            wrap(symbols),
        )
        for finding in finalized.findings
    ]
    done: list[Verification] = []
    try:
        for future in futures:
            with cancel.interruptible():
                future.wait()
            done.append(finished_result(future))
    except KeyboardInterrupt:  # keep the verifications done; the requests in flight are abandoned
        done += _finished(futures[len(done) :])
        records = (*stages.records, *(record for result in done for record in result.records))
        verified = apply_verifications(finalized, done, settings.confidence_threshold)
        cancelled = verified.model_copy(
            update={"complete": False, "warnings": (*verified.warnings, CANCELLED)}
        )
        return cancelled, abandon(handle, records)
    return apply_verifications(finalized, done, settings.confidence_threshold), 0


def _finished(futures: list[PrefectFuture[Verification]]) -> list[Verification]:
    """The results of the futures that completed (a cancel does not wait for the others)."""
    return [finished_result(f) for f in futures if f.state.is_completed()]
