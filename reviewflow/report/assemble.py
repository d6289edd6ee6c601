"""A review's `ReviewOutcome`, put together from what its stages returned.

The flow only orders the stages; what their results add up to (status, exit code, metadata,
files, findings, drops, warnings, errors and usage) is decided here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from reviewflow.cancel import EXIT_CODE as CANCELLED_EXIT
from reviewflow.config import Config
from reviewflow.cost.prices import ReviewPrices, review_prices
from reviewflow.cost.usage import spent_by_model
from reviewflow.findings.finalize import Finalized, gate
from reviewflow.findings.localize import Localized
from reviewflow.findings.models import Dropped, DropReason, Finding
from reviewflow.findings.stages import CANCELLED, ModelStages, summarize
from reviewflow.git.models import Change
from reviewflow.models import ReviewWarning
from reviewflow.providers.budget import BudgetState
from reviewflow.providers.pool import UsageTotals
from reviewflow.pullrequest.context import PullRequestContext, on_the_request
from reviewflow.report.location import review_id
from reviewflow.report.outcome import (
    ExcludedFile,
    ModelInfo,
    PullRequestReport,
    ReviewedFile,
    ReviewMetadata,
    ReviewOutcome,
)
from reviewflow.report.preview import change_metadata, rule_record
from reviewflow.request import ReviewRequest
from reviewflow.review.records import RequestRecord, total_usage
from reviewflow.sast.models import SastScan
from reviewflow.select.filtering import Selection
from reviewflow.select.scope import Scope


def review_outcome(
    request: ReviewRequest,
    config: Config,
    change: Change,
    scope: Scope,
    results: tuple[ModelStages, Finalized, Localized],
    started: datetime,
    unrecorded_requests: int = 0,
    sast: SastScan | None = None,
    *,
    estimate: dict[str, Any] | None = None,
    budget: BudgetState | None = None,
) -> ReviewOutcome:
    """The outcome of a review whose model stages, finalize and localization returned
    `results`; `unrecorded_requests` were sent but no record holds them (Ctrl-C); `sast` is
    the pre-scan's (`--sast`); with the review's `estimate` and its `budget`'s state when it
    had one."""
    stages, finalized, localized = results
    cancelled = stages.cancelled or CANCELLED in (*finalized.warnings, *localized.warnings)
    complete = stages.complete and finalized.complete and localized.complete
    records = stages.records + finalized.records + localized.records
    findings, dismissed = split_dismissed(localized.findings, request.pull_request)
    pull_request = pull_request_report(request.pull_request, findings)
    carried = pull_request.carried if pull_request else ()
    exit_code = gate(findings, config.review.fail_on, complete)
    if exit_code == 0 and any(f.severity in config.review.fail_on for f in carried):
        exit_code = 1  # an open finding of the request, from an earlier run, still fails it
    outcome = ReviewOutcome(
        review_id=review_id(started, change.diff_sha256[:8]),
        status="complete" if complete else "incomplete",
        exit_code=CANCELLED_EXIT if cancelled else exit_code,
        metadata=review_metadata(scope, request, config, (started, datetime.now(UTC)), sast),
        files_changed=len(change.files),
        files=reviewed_files(scope.selection),
        incomplete_files=unfinished(stages, scope.selection, cancelled),
        excluded=excluded_files(scope.selection),
        chunks=stages.chunks,
        tool_calls=stages.tool_calls,
        findings=findings,
        dropped=(*finalized.dropped, *dismissed),
        warnings=(*scope.warnings, *stages.warnings, *finalized.warnings, *localized.warnings),
        errors=request_errors(records),
        usage=usage_totals(records, stages.unrecorded_requests + unrecorded_requests),
        duration_ms=int((datetime.now(UTC) - started).total_seconds() * 1000),
        process=records,
        pull_request=pull_request,
    )
    return with_cost(outcome, review_prices(config), estimate, budget)


def with_cost(
    outcome: ReviewOutcome,
    prices: ReviewPrices,
    estimate: dict[str, Any] | None,
    budget: BudgetState | None,
) -> ReviewOutcome:
    """`outcome` with its estimate, the usage's cost (each model's requests at its `prices`),
    the budget's state, and the files whose requests the budget refused among the incomplete
    ones (with the warning that says so)."""
    refused = budget_refused(outcome.process)
    incomplete = tuple(sorted({*outcome.incomplete_files, *refused}))
    currency = (estimate or {}).get("price", {}) or {}
    warning = budget_warning(budget, len(outcome.files), len(incomplete), currency.get("currency"))
    spent = spent_by_model(outcome.process, prices)
    return outcome.model_copy(
        update={
            "estimate": estimate,
            "cost": spent.cost,
            "usage_by_model": spent.models,
            "budget": budget,
            "budget_files": refused,
            "incomplete_files": incomplete,
            "warnings": (*outcome.warnings, *warning),
        }
    )


def unfinished(stages: ModelStages, selection: Selection, cancelled: bool) -> tuple[str, ...]:
    """The reviewed files a model stage of which did not finish; after a cancel, also those
    with no finished result at all (begun or not)."""
    if not cancelled:
        return stages.incomplete_files
    done = stages.finished_paths()  # with several passes: every pass of the file
    kept = {item.file.path for item in selection.kept}
    return tuple(sorted({*stages.incomplete_files, *(kept - done)}))


def budget_warning(
    budget: BudgetState | None, files: int, incomplete: int, currency: str | None = None
) -> tuple[ReviewWarning, ...]:
    """The review-wide warning that the budget stopped requests (none when it did not)."""
    if budget is None or not budget.reached:
        return ()
    return (
        ReviewWarning(
            "budget_reached",
            f"budget of {budget.describe(currency)} reached after {files - incomplete} of {files} "
            f"files: {budget.refused_requests} request(s) not sent, {incomplete} file(s) "
            "incomplete (raise --max-tokens/--max-cost and run again: finished files are "
            "reused from the cache)",
        ),
    )


def budget_refused(records: Sequence[RequestRecord]) -> tuple[str, ...]:
    """The files a request of which the budget refused (not sent)."""
    return tuple(sorted({r.path for r in records if r.status == "not_sent" and r.path}))


def split_dismissed(
    findings: Sequence[Finding], context: PullRequestContext | None
) -> tuple[tuple[Finding, ...], tuple[Dropped, ...]]:
    """The findings nobody dismissed on the request, and the dismissed ones as drops (a finding
    of several passes dismissed as another finding of its cluster: `dismissed_as` names it)."""
    if context is None:
        return tuple(findings), ()
    kept: list[Finding] = []
    drops: list[Dropped] = []
    for f in findings:
        key = context.dismissal_of(f.fingerprints)
        if key is None:
            kept.append(f)
            continue
        drops.append(
            Dropped(
                path=f.path,
                title=f.title,
                reason=DropReason.DISMISSED,
                detail=context.dismissed[key],
                finding=f,
                dismissed_as=None if key == f.fingerprint else key,
            )
        )
    return tuple(kept), tuple(drops)


def pull_request_report(
    context: PullRequestContext | None, findings: Sequence[Finding]
) -> PullRequestReport | None:
    """The request this review publishes to, with its carried findings this run did not
    report again itself and the dismissals people made on it."""
    if context is None:
        return None
    reported = {key for f in findings for key in f.fingerprints}
    return PullRequestReport(
        platform=context.ref.platform,
        repository=context.ref.repo,
        number=context.ref.number,
        url=context.info.web_url,
        scope=context.scope.value,
        base_sha=context.base,
        head_sha=context.head,
        previous_head=context.previous_head,
        carried=tuple(f for f in context.carried if reported.isdisjoint(f.fingerprints)),
        dismissed=on_the_request(context.dismissed) or None,
    )


def cancelled_outcome(outcome: ReviewOutcome) -> ReviewOutcome:
    """`outcome` as a cancel leaves it (one that came after the model stages): incomplete,
    exit 130, with the cancelled warning."""
    if outcome.exit_code == CANCELLED_EXIT:
        return outcome
    return outcome.model_copy(
        update={
            "status": "incomplete",
            "exit_code": CANCELLED_EXIT,
            "warnings": (*outcome.warnings, CANCELLED),
        }
    )


def cancelled_before(
    request: ReviewRequest, config: Config, scope: Scope, started: datetime
) -> ReviewOutcome:
    """The outcome of a review cancelled before its model stages ran (its inputs were read:
    `scope`): no file reviewed, incomplete, exit 130."""
    nothing = (summarize((), (), ()).cancel(0), Finalized(), Localized())
    return review_outcome(request, config, scope.change, scope, nothing, started)


def request_errors(records: tuple[RequestRecord, ...]) -> tuple[ReviewWarning, ...]:
    """Each failed model request, as an error entry of the report."""
    return tuple(
        ReviewWarning(f"{record.stage}_request_failed", record.error or "failed", record.path)
        for record in records
        if record.status == "error"  # not "not_sent": the budget's refusals are no failure
    )


def usage_totals(records: tuple[RequestRecord, ...], unrecorded: int) -> UsageTotals:
    """The review's usage: its records' (answers reused cost nothing) and `unrecorded` more
    requests, sent by stages that never finished."""
    usage, requests = total_usage(records)
    return UsageTotals(**usage.model_dump(), requests=requests + unrecorded)


def utc_iso(moment: datetime) -> str:
    """An ISO 8601 UTC timestamp to the second, e.g. `2026-11-30T23:35:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def review_metadata(
    scope: Scope,
    request: ReviewRequest,
    config: Config,
    times: tuple[datetime, datetime],
    sast: SastScan | None = None,
) -> ReviewMetadata:
    """The report's metadata; the model is named by protocol, name and endpoint (no key);
    the instructions, verification and SAST pre-scan when the review used them."""
    model, review = config.model, config.review
    verification = None
    if review.verify:
        verification = {
            "model": review.verify_model or model.name,
            "budget": review.verify_budget,
            "threshold": review.confidence_threshold,
        }
    return ReviewMetadata.model_validate(
        {
            **change_metadata(scope, request),
            "model": ModelInfo(
                protocol=model.protocol,
                name=model.name,
                endpoint=model.effective_endpoint,
                platform=model.platform,
            ),
            "language": config.output.language,
            "started_at": utc_iso(times[0]),
            "finished_at": utc_iso(times[1]),
            "instructions": scope.instructions.record() if scope.instructions else None,
            "verification": verification,
            "sast": sast_record(sast) if sast is not None else None,
        }
    )


def sast_record(scan: SastScan) -> dict[str, Any]:
    """The pre-scan in the report: semgrep, the rules, files scanned and answered from the
    cache, results on added lines, and the review's wait for it (the CLI's early scan runs
    beside the review's start: only what the review waited for is counted)."""
    return {
        "semgrep_version": scan.semgrep_version,
        "rules": scan.rules,
        "rules_sha256": scan.rules_digest,
        "files": scan.files,
        "cached": scan.reused,
        "results": scan.total,
        "duration_ms": scan.duration_ms,
    }


def reviewed_files(selection: Selection) -> tuple[ReviewedFile, ...]:
    return tuple(
        ReviewedFile(path=item.file.path, rule=rule_record(item.rule)) for item in selection.kept
    )


def excluded_files(selection: Selection) -> tuple[ExcludedFile, ...]:
    return tuple(
        ExcludedFile(path=ex.path, reason=ex.reason.value, detail=ex.detail)
        for ex in selection.excluded
    )
