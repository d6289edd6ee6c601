"""The review flow (`review`), and how a process runs it: in threads, on Dask, or on the managed
server with the review's key in a provider pool of this process. Its flow run is named by the
review's ID and ends in the state its exit code says (`ended`)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from functools import cache
from typing import Any
from uuid import UUID

from prefect import Flow, flow
from prefect.client.orchestration import get_client
from prefect.runtime import flow_run
from prefect.settings import (
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    Settings,
    get_current_settings,
    temporary_settings,
)
from prefect.states import Cancelled, Failed, State

from flows.runners import submitted, task_runner_for, threads
from flows.stages import awaited, cancelled, review_budget, review_symbols, run_model_stages
from flows.verification import run_verification
from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE as CANCELLED_EXIT
from reviewflow.config import Config, TaskRunner
from reviewflow.cost.budget import budget_for
from reviewflow.entry import FrontHalf
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.localize import Localized
from reviewflow.findings.stages import CANCELLED, ModelStages
from reviewflow.fsutil import private_umask
from reviewflow.git.models import Change
from reviewflow.providers.pool import ProviderHandle, ReviewObserver, review_pools
from reviewflow.publish.setup import fallback_summary
from reviewflow.pullrequest.context import PullRequestContext
from reviewflow.pullrequest.models import PublishResult
from reviewflow.report.gate import run_reason
from reviewflow.report.location import review_id
from reviewflow.report.outcome import ReviewRun
from reviewflow.request import ReviewRequest
from reviewflow.review.packs import FileContext
from reviewflow.review.reader import Snapshot
from reviewflow.sast.models import SastScan
from reviewflow.select.scope import Scope
from tasks.caching import as_is, stage_options, unquoted
from tasks.chunk import chunk_files
from tasks.estimate import estimate_cost
from tasks.finalize import finalize_findings
from tasks.index import index_context
from tasks.localize import localize_findings
from tasks.prepare import Prepared, prepare_review
from tasks.publish import publish_findings
from tasks.report import write_review_reports
from tasks.sast import sast_prescan
from tasks.silence import load_dismissals, silence_findings
from tasks.snapshot import identify_snapshot, ship_snapshot

ReviewFlow = Flow[
    [ReviewRequest, Config, ProviderHandle, dict[str, Any] | None, Prepared | None],
    "ReviewRun | State[ReviewRun]",
]


class ReviewEnded(Exception):
    """The result of a review's flow run that ended Cancelled (exit 130) or Failed (exit 2):
    the reason, and the review's run for the process that ran it (a Failed or Cancelled state's
    result must be an exception for Prefect to read it back)."""

    def __init__(self, reason: str, run: ReviewRun) -> None:
        super().__init__(reason)
        self.run = run

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReviewEnded, (str(self), self.run))


def public_config(config: Config) -> Config:
    """The config without its API key: what may become a flow parameter."""
    model = config.model.model_copy(update={"api_key": None})
    return config.model_copy(update={"model": model})


@flow(name="review", validate_parameters=True, log_prints=False)
def review(
    request: ReviewRequest,
    config: Config,
    handle: ProviderHandle,
    estimate: dict[str, Any] | None = None,
    prepared: Prepared | None = None,
) -> ReviewRun | State[ReviewRun]:
    """Review one change: diff, files and rules, the model stages per file, findings, reports.
    `estimate`: the CLI's (it printed it at the start), else this run's `estimate_cost` stage
    makes it (a deployment's run, a CLI review with `--console off` or `--sast`). `prepared`:
    the CLI's front half, else the `prepare_review` stage reads the change itself."""
    cancel.reclaim_sigterm()  # a CLI's SIGTERM cancels as Ctrl-C does (not a crash)
    started = datetime.now(UTC)
    prepared = prepare_review(as_is(request), as_is(config.review), as_is(prepared))
    scope, settings = prepared.scope, config.review
    named = name_run(review_id_of(started, scope.change))  # as its report names it
    dismissed, request = load_dismissals(as_is(request), as_is(scope))
    snapshot = identify_snapshot(as_is(scope))
    sast = _prescan(scope, config, request) if settings.sast else None
    packs = _packs(scope, snapshot[0], config, request.home, prepared.packs)
    jobs = chunk_files(
        as_is(scope), as_is(settings), config.output.language, as_is(sast), as_is(packs)
    )
    options = stage_options(request.home, request.no_cache, settings.shared_store)
    if estimate is None:
        estimate = estimate_cost(as_is(jobs), as_is(snapshot[0]), as_is(config))
    budget = review_budget(handle)  # now: a cancel closes the pool
    read = _shipped(snapshot, settings.shared_store)  # what the tools of the stages read
    symbols = review_symbols(scope, config, request.home)  # None: review.context off
    stages = run_model_stages(jobs, read, scope, config, handle, options, symbols)
    finalized = finalize_findings(as_is(stages.by_pass(settings.passes)), as_is(settings))
    finalized = silence_findings(
        as_is(finalized),
        as_is(list(stages.files)),
        as_is(snapshot[0]),
        as_is(dismissed),
        as_is(settings),
        bool(request.ci_variables),
        request.audit,
    )
    finalized, unverified = run_verification(
        stages, finalized, read, config, handle, options, symbols
    )
    localized, unrecorded = _localize(stages, finalized, config, handle, options)
    run = write_review_reports(
        as_is(request),
        as_is(config),
        as_is(scope),
        as_is((stages, finalized, localized)),
        started,
        unrecorded + unverified,
        as_is((sast, estimate, budget)),
    )
    name_run(run.outcome.review_id, unless=named)  # its reports' folder took another ID
    if request.pull_request is not None:
        run = _publish(run, request.pull_request)
    return ended(run, config)


def review_id_of(started: datetime, change: Change) -> str:
    """The review's ID, as its report names it: its start and its diff's hash."""
    return review_id(started, change.diff_sha256[:8])


def name_run(name: str, unless: str | None = None) -> str:
    """Name this flow run `name` (the review's ID) in the Prefect API, unless it is so named."""
    run_id = flow_run.get_id()
    if name == unless:
        return name
    if run_id is not None:
        with get_client(sync_client=True) as client:
            client.update_flow_run(UUID(run_id), name=name)
    return name


def ended(run: ReviewRun, config: Config) -> ReviewRun | State[ReviewRun]:
    """How the review's flow run ends: Cancelled for exit 130, Failed with the reason for exit 2
    (both with `ReviewEnded` as their result), else Completed with the run."""
    if run.exit_code == CANCELLED_EXIT:
        return Cancelled(message=CANCELLED.message, data=ReviewEnded(CANCELLED.message, run))
    if run.exit_code == 2:
        reason = run_reason(run, config.review.fail_on)
        return Failed(message=reason, data=ReviewEnded(reason, run))
    # As is: Prefect would otherwise walk the whole outcome at the flow's end looking for futures.
    return as_is(run)


def _shipped(snapshot: tuple[Snapshot, str], store: str | None) -> tuple[Snapshot, str]:
    """What the model stages' tools read: the snapshot here, or its bundle in the shared store
    (its identity, and so the stages' cache keys, unchanged)."""
    if store is None:
        return snapshot
    return ship_snapshot(as_is(snapshot[0]), store), snapshot[1]


def _packs(
    scope: Scope,
    snapshot: Snapshot,
    config: Config,
    home: str,
    handed: dict[str, FileContext] | None,
) -> dict[str, FileContext] | None:
    """Every kept file's context pack (the index stage: `handed`, the CLI's, else its own), or
    None with `review.context` off."""
    if not config.review.context:
        return None
    return index_context(as_is(scope), as_is(snapshot), as_is(config.review), home, as_is(handed))


def _prescan(scope: Scope, config: Config, request: ReviewRequest) -> SastScan:
    """The SAST results (`--sast`): the CLI's early scan's, read from the cache even with
    `--no-cache` (it ran for this review), else this stage's own scan."""
    refresh = request.no_cache and not request.sast_prescanned
    return sast_prescan(as_is(scope), as_is(config.review), request.home, refresh)


def _publish(run: ReviewRun, context: PullRequestContext) -> ReviewRun:
    """`run` with its findings published on the request (not after a cancel), or why that
    failed and the summary that was not posted: a failure never changes the review's exit
    code (the publishing task run ends Failed, the review does not)."""
    if run.outcome.exit_code == CANCELLED_EXIT or cancel.requested():
        return run
    state = publish_findings(as_is(run.outcome), context, return_state=True)
    result = state.result(raise_on_failure=False)
    if isinstance(result, PublishResult):
        return run.model_copy(update={"published": result})
    reason = f"publishing on {context.ref.repo}#{context.ref.number} failed: {result}"
    summary = fallback_summary(context, run.outcome, reason)
    return run.model_copy(update={"publish_error": reason, "publish_summary": summary})


def _localize(
    stages: ModelStages,
    finalized: Finalized,
    config: Config,
    handle: ProviderHandle,
    options: dict[str, Any],
) -> tuple[Localized, int]:
    """The findings in the output language (none asked for after Ctrl-C: no new requests),
    and the requests sent that no record holds (after Ctrl-C here: the findings are kept as
    they are, the request in flight abandoned)."""
    if cancelled(stages):
        return Localized(findings=finalized.findings), 0
    task = localize_findings.with_options(**options)
    wrap, language = submitted(config), config.output.language
    return awaited(
        lambda: task.submit(wrap(list(finalized.findings)), language, wrap(handle)),
        handle,
        (*stages.records, *finalized.records),
        lambda: Localized(findings=finalized.findings, complete=False, warnings=(CANCELLED,)),
    )


def review_flow(config: Config) -> ReviewFlow:
    """The review flow on `config`'s task runner (each run duplicates the runner)."""
    if config.review.task_runner is TaskRunner.THREAD:
        return threaded_review(config.review.concurrency)
    return review.with_options(task_runner=task_runner_for(config))


@cache
def threaded_review(max_workers: int) -> ReviewFlow:
    """The review flow on `max_workers` threads, built once per size: building a flow derives
    its parameter schema (~70 ms here)."""
    return review.with_options(task_runner=threads(max_workers))


def heartbeat_off() -> AbstractContextManager[Settings | None]:
    """No flow run heartbeat (a CLI review's run ends with its process; the settings are read
    again only when it is on: ~0.1 s). Without it, every flow run pays ~1 s at its end."""
    if get_current_settings().flows.heartbeat_frequency is None:
        return nullcontext()
    return temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


def run_review(
    request: ReviewRequest,
    config: Config,
    *,
    progress: ReviewObserver | None = None,
    front: FrontHalf | None = None,
) -> ReviewRun:
    """Run the review flow in this process, its key in a provider pool of this process (never a
    parameter); `progress` is told of requests and finished files; `front` is the review's
    front half as a CLI prepared it (`reviewflow.entry.prepare`: the flow is handed its scope,
    estimate and context packs, and makes none of them).
    A run that ended Cancelled or Failed (exit 130 or 2) returns its review all the same.
    What the run writes (cached answers, reports' folders) is the user's alone. The review's
    budget (`review.max_tokens`, `review.max_cost`) is held by its pool: every request of the
    review, from whichever of its threads, draws on it."""
    budget = budget_for(config)  # ConfigError for one that cannot hold, before the flow starts
    flow_ = review_flow(config)
    estimate = None if front is None else front.estimate
    prepared = None if front is None else Prepared(scope=front.scope, packs=front.packs)
    with (
        private_umask(),
        review_pools(config, observer=progress, budget=budget) as pool,
    ):
        try:
            with cancel.deferred():  # the flow takes a cancel where it waits for its stages
                state = flow_(
                    request,
                    public_config(config),
                    pool.handle,
                    estimate,
                    prepared,
                    return_state=True,
                )
        except BaseException:
            if cancel.requested():  # the run ended by a cancel before its body could take it
                raise KeyboardInterrupt from None
            raise
    result = unquoted(state.result(raise_on_failure=False))
    if isinstance(result, ReviewEnded):  # ended Cancelled or Failed (exit 130 or 2)
        return result.run
    if isinstance(result, BaseException):
        raise result
    return ReviewRun.model_validate(result)
