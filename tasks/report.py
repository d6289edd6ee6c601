"""Last stage, report: the review directory and ID, the report files, and Prefect artifacts."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from reviewflow.config import OutputSettings
from reviewflow.report.artifacts import artifact_key, findings_table, summary_markdown
from reviewflow.report.location import review_dir
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.writers import needs_directory, write_reports


@task(name="report", cache_policy=NO_CACHE, retries=0)  # writes files: never cached or retried
def write_review_reports(
    outcome: ReviewOutcome, output: OutputSettings, home: str
) -> tuple[ReviewOutcome, dict[str, str], str | None]:
    """Name the review, write its report files (0600) and publish its artifacts.

    `outcome.review_id` is the wanted ID; `-2`, `-3` is added when another review has it.
    Returns the outcome with its final review ID, each written report's path by kind, and
    why a report could not be written (the others and the artifacts are, all the same).
    """
    directory, review_id = review_dir(
        Path(home),
        outcome.metadata.repository,
        outcome.review_id,
        output.report_dir,
        create=needs_directory(output),  # no empty directory when every report is off or elsewhere
    )
    outcome = outcome.model_copy(update={"review_id": review_id})
    written, failure = write_reports(outcome, output, directory)
    repository, mode = outcome.metadata.repository, outcome.metadata.mode
    create_markdown_artifact(
        key=artifact_key(repository, mode),
        markdown=summary_markdown(outcome),
        description="reviewflow review summary",
    )
    create_table_artifact(
        key=artifact_key(repository, f"{mode}-findings"),
        table=findings_table(outcome) or [{"severity": "", "location": "", "title": "no findings"}],
        description="reviewflow findings",
    )
    return outcome, written, failure
