"""Last stage, report: the review directory and ID, the report files, and Prefect artifacts."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE
from reviewflow.config import OutputSettings
from reviewflow.report.artifacts import artifact_key, artifact_summary, findings_table
from reviewflow.report.assemble import cancelled_outcome
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.writers import write_review_files


@task(name="report", cache_policy=NO_CACHE, retries=0)  # writes files: never cached or retried
def write_review_reports(
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
