"""The estimate of one review, from its scope or its file jobs, as the preview, the CLI and the
flow make it (the same function, so the three agree)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reviewflow.config import Config
from reviewflow.context.build import Progress
from reviewflow.cost.charges import StagePrices
from reviewflow.cost.estimate import estimate_review
from reviewflow.cost.prices import price_of, review_prices
from reviewflow.cost.sizes import file_sizes
from reviewflow.cost.text import estimate_record
from reviewflow.review.jobs import FileJob, file_jobs, snapshot_of
from reviewflow.review.packs import FileContext, context_packs
from reviewflow.review.reader import Snapshot
from reviewflow.sast.models import SastScan
from reviewflow.select.scope import Scope


def jobs_estimate(jobs: Sequence[FileJob], snapshot: Snapshot, config: Config) -> dict[str, Any]:
    """The `estimate` object of a review of `jobs`, whose tools read `snapshot`."""
    sizes = file_sizes(snapshot, [job.path for job in jobs])
    prices = StagePrices.of(config, review_prices(config))  # each stage at its model's price
    language = config.output.language
    estimate = estimate_review(jobs, sizes, config.review, language, price_of(config.model), prices)
    return estimate_record(estimate, config.model, config.review)


def scope_estimate(
    scope: Scope,
    config: Config,
    sast: SastScan | None = None,
    *,
    home: str,
    progress: Progress | None = None,
    packs: Mapping[str, FileContext] | None = None,
) -> dict[str, Any]:
    """The `estimate` object of a review of `scope` (chunked as the review will chunk it, with
    the context packs it will send: `packs` when the caller made them, else made here from the
    code index in `home`, or the shared store's, its first build shown through `progress`)."""
    snapshot = snapshot_of(scope)
    if packs is None:
        packs = context_packs(scope, snapshot, config.review, home, progress)
    jobs = file_jobs(scope, config.review, config.output.language, sast, packs)
    return jobs_estimate(jobs, snapshot, config)
