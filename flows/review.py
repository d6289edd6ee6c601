"""The review flow. `python -m flows.review ARGS` is the same as `reviewflow review ARGS`."""

from __future__ import annotations

import sys

if __name__ == "__main__":  # hand over to the CLI before paying for the Prefect import
    from flows.warm import entry

    raise SystemExit(entry(["review", *sys.argv[1:]]))

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from functools import cache

from prefect import Flow, flow
from prefect.settings import (
    PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
    Settings,
    get_current_settings,
    temporary_settings,
)
from pydantic import BaseModel, ConfigDict

from flows.runners import submitted, task_runner_for, threads
from flows.stages import CANCELLED, ModelStages, abandon, finished_result, run_model_stages
from reviewflow.config import Config, TaskRunner
from reviewflow.errors import OutputError
from reviewflow.findings.finalize import Finalized, gate
from reviewflow.findings.localize import Localized
from reviewflow.models import ReviewWarning
from reviewflow.providers.pool import ProviderHandle, ProviderPool, UsageTotals
from reviewflow.report.assemble import excluded_files, review_metadata, reviewed_files
from reviewflow.report.console import make_console, print_console
from reviewflow.report.location import review_id
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.progress import ProgressDisplay
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import snapshot_of
from reviewflow.review.records import RequestRecord, total_usage
from reviewflow.select.reviewed import ReviewedFiles
from reviewflow.select.scope import Scope
from tasks.caching import as_is
from tasks.chunk import chunk_files
from tasks.diff import collect_diff, identify_snapshot
from tasks.finalize import finalize_findings
from tasks.localize import localize_findings
from tasks.report import write_review_reports
from tasks.select import select_files

# Progress displays of reviews running in this process, by provider pool ID (the flow's
# parameters go to the Prefect API, so a display cannot be one).
_PROGRESS: dict[str, ProgressDisplay] = {}


class ReviewRun(BaseModel):
    """What the flow returns: the outcome, where each report file went, and why a report could
    not be written (the console report is printed all the same, then the CLI exits 2)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: ReviewOutcome
    written: dict[str, str]
    report_error: str | None = None

    @property
    def exit_code(self) -> int:
        """The outcome's exit code, or 2 when a report could not be written."""
        return 2 if self.report_error else self.outcome.exit_code


def public_config(config: Config) -> Config:
    """The config without its API key: what may become a flow parameter."""
    model = config.model.model_copy(update={"api_key": None})
    return config.model_copy(update={"model": model})


@flow(name="review", validate_parameters=True, log_prints=False)
def review(request: ReviewRequest, config: Config, handle: ProviderHandle) -> ReviewRun:
    """Review one change: diff, files and rules, the model stages per file, findings, reports."""
    started = datetime.now(UTC)
    change = collect_diff(as_is(request), config.review.context_lines)
    scope = select_files(as_is(change), as_is(request), config.review.max_file_bytes)
    jobs = chunk_files(as_is(scope), as_is(config.review), config.output.language)
    reviewed = ReviewedFiles.of([item.file for item in scope.selection.kept])
    stages = run_model_stages(
        jobs,
        snapshot_of(scope),
        identify_snapshot(as_is(change)),
        reviewed,
        config,
        handle,
        home=request.home,
        refresh=request.no_cache,
        on_file_done=_progress_callback(handle),
    )
    finalized = finalize_findings(as_is(stages.files), as_is(config.review))
    localized, unrecorded = _localize(stages, finalized, config, handle)
    cancelled = stages.cancelled or CANCELLED in localized.warnings
    complete = stages.complete and finalized.complete and localized.complete
    records = stages.records + localized.records
    outcome = ReviewOutcome(
        review_id=review_id(started, change.diff_sha256[:8]),
        status="complete" if complete else "incomplete",
        exit_code=130 if cancelled else gate(localized.findings, config.review.fail_on, complete),
        metadata=review_metadata(
            scope, request, config.model, config.output.language, started, datetime.now(UTC)
        ),
        files_changed=len(change.files),
        files=reviewed_files(scope.selection),
        incomplete_files=stages.incomplete_files,
        excluded=excluded_files(scope.selection),
        chunks=stages.chunks,
        tool_calls=stages.tool_calls,
        findings=tuple(localized.findings),
        dropped=tuple(finalized.dropped),
        warnings=(*scope.warnings, *stages.warnings, *finalized.warnings, *localized.warnings),
        errors=_errors(records),
        usage=_usage(records, stages.unrecorded_requests + unrecorded),
        duration_ms=int((datetime.now(UTC) - started).total_seconds() * 1000),
        process=records,
    )
    final, written, failure = write_review_reports(
        as_is(outcome), as_is(config.output), request.home
    )
    return ReviewRun(outcome=final, written=written, report_error=failure)


def _localize(
    stages: ModelStages, finalized: Finalized, config: Config, handle: ProviderHandle
) -> tuple[Localized, int]:
    """The findings in the output language (none asked for after Ctrl-C: no new requests),
    and the requests sent that no record holds (after Ctrl-C here)."""
    if stages.cancelled:
        return Localized(findings=finalized.findings), 0
    task = localize_findings.with_options(**stages.options)
    wrap, language = submitted(config), config.output.language
    try:
        submitted_task = task.submit(wrap(list(finalized.findings)), language, wrap(handle))
        return finished_result(submitted_task), 0
    except KeyboardInterrupt:  # keep the findings as they are; the request in flight is abandoned
        cancelled = Localized(findings=finalized.findings, complete=False, warnings=(CANCELLED,))
        return cancelled, abandon(handle, stages.records)


def _progress_callback(handle: ProviderHandle) -> Callable[[str], None]:
    display = _PROGRESS.get(handle.pool_id)
    return display.file_done if display is not None else (lambda path: None)


def _errors(records: tuple[RequestRecord, ...]) -> tuple[ReviewWarning, ...]:
    """Each failed model request, as an error entry of the report."""
    return tuple(
        ReviewWarning(f"{record.stage}_request_failed", record.error or "failed", record.path)
        for record in records
        if record.status == "error"
    )


def _usage(records: tuple[RequestRecord, ...], unrecorded: int) -> UsageTotals:
    usage, requests = total_usage(records)
    return UsageTotals(**usage.model_dump(), requests=requests + unrecorded)


def review_flow(config: Config) -> Flow[[ReviewRequest, Config, ProviderHandle], ReviewRun]:
    """The review flow on `config`'s task runner (each run duplicates the runner)."""
    if config.review.task_runner is TaskRunner.THREAD:
        return threaded_review(config.review.concurrency)
    return review.with_options(task_runner=task_runner_for(config))


@cache
def threaded_review(max_workers: int) -> Flow[[ReviewRequest, Config, ProviderHandle], ReviewRun]:
    """The review flow on `max_workers` threads, built once per size: building a flow derives
    its parameter schema (~70 ms here)."""
    return review.with_options(task_runner=threads(max_workers))


def _heartbeat_off() -> AbstractContextManager[Settings | None]:
    """No heartbeat for a CLI review (the settings are re-read only when it is on: ~0.1 s)."""
    if get_current_settings().flows.heartbeat_frequency is None:
        return nullcontext()
    return temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


def run_review(request: ReviewRequest, config: Config, scope: Scope, env: Mapping[str, str]) -> int:
    """Run the review flow here (the key stays in this process's pool) and print the result.

    `scope` is the front half the CLI already checked: it sizes the progress display.
    """
    progress = ProgressDisplay(
        sys.stderr, env, len(scope.selection.kept), enabled=config.output.progress
    )
    try:
        with ProviderPool.from_config(config, observer=progress.request_done) as pool:
            _PROGRESS[pool.id] = progress
            try:
                with _heartbeat_off():
                    state = review_flow(config)(
                        request, public_config(config), pool.handle, return_state=True
                    )
            finally:
                _PROGRESS.pop(pool.id, None)
    finally:
        progress.close()
    result = state.result(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    run = ReviewRun.model_validate(result)
    stream = sys.stderr if config.output.to_stdout else sys.stdout  # stdout: that report alone
    print_console(run.outcome, config.output.console, make_console(stream, env), run.written)
    if run.report_error:
        raise OutputError(run.report_error)
    return run.exit_code
