"""Last stage, report: the review's outcome assembled from its stages' results, its directory
and ID, the report files, and Prefect artifacts."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE
from reviewflow.config import Config, OutputSettings
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.localize import Localized
from reviewflow.findings.stages import ModelStages
from reviewflow.providers.budget import Budget
from reviewflow.report.artifacts import artifact_key, artifact_summary, findings_table
from reviewflow.report.assemble import cancelled_outcome, review_outcome
from reviewflow.report.outcome import ReviewOutcome, ReviewRun
from reviewflow.report.writers import write_review_files
from reviewflow.request import ReviewRequest
from reviewflow.sast.models import SastScan
from reviewflow.select.scope import Scope


@task(name="report", cache_policy=NO_CACHE, retries=0)  # writes files: never cached or retried
def write_review_reports(
    request: ReviewRequest,
    config: Config,
    scope: Scope,
    results: tuple[ModelStages, Finalized, Localized],
    started: datetime,
    unrecorded: int,
    extras: tuple[SastScan | None, dict[str, Any] | None, Budget | None],
) -> ReviewRun:
    """The review's outcome, from its stages' `results` (`unrecorded`: requests sent that no
    record holds; `extras`: the SAST results, the estimate and the review's budget), with its
    report files written and its artifacts published (`write_outcome`)."""
    sast, estimate, budget = extras
    outcome = review_outcome(
        request,
        config,
        scope.change,
        scope,
        results,
        started,
        unrecorded,
        sast=sast,
        estimate=estimate,
        budget=budget.state() if budget is not None else None,
    )
    final, written, failure = write_outcome(outcome, config.output, request.home)
    return ReviewRun(outcome=final, written=written, report_error=failure)


def write_outcome(
    outcome: ReviewOutcome, output: OutputSettings, home: str
) -> tuple[ReviewOutcome, dict[str, str], str | None]:
    """Name the review, write its report files (0600) and publish its artifacts.

    `outcome.review_id` is the wanted ID; `-2`, `-3` is added when another review has it.
    Returns the outcome with its final review ID, each written report's path by kind, and
    why a report could not be written (the others and the artifacts are, all the same).
    A cancel that came before or while the files were written makes them a cancelled
    review's (written again, in the same directory): the review ends with exit 130.
    """
    if cancel.requested():
        outcome = cancelled_outcome(outcome)
    outcome, written, failure, directory = write_review_files(outcome, output, Path(home))
    if cancel.requested() and outcome.exit_code != EXIT_CODE:
        outcome = cancelled_outcome(outcome)
        outcome, written, failure, _ = write_review_files(outcome, output, Path(home), directory)
    repository, mode = outcome.metadata.repository, outcome.metadata.mode
    create_markdown_artifact(
        key=artifact_key(repository, mode),
        markdown=artifact_summary(outcome, written),
        description="reviewflow review summary",
    )
    create_table_artifact(
        key=artifact_key(repository, f"{mode}-findings"),
        table=findings_table(outcome) or [{"severity": "", "location": "", "title": "no findings"}],
        description="reviewflow findings",
    )
    return outcome, written, failure
