"""A deployed review's end in words: why its gate does not pass, and its run summary.

A deployed run ends Completed or Failed with the reason as its state message; its summary
(`RunSummary`) is published as a table artifact, so whoever triggered the run (`reviewflow
deployment-run`, the Prefect UI) can read it whether the run passed or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from reviewflow.cancel import EXIT_CODE as CANCELLED_EXIT
from reviewflow.findings.models import Finding
from reviewflow.models import Severity
from reviewflow.pullrequest.state import PriorFinding
from reviewflow.report.artifacts import artifact_key
from reviewflow.report.outcome import ReviewOutcome, ReviewRun, budget_line
from reviewflow.report.wording import counted

GATE_PASSED = "gate passed"
SUMMARY_MODE = "ci-review"  # the summary artifact's key: reviewflow-<repository>-ci-review-<hash>


class RunSummary(BaseModel):
    """One review of a deployed run, as its summary artifact holds it: small, JSON, no secret."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    review_id: str
    status: Literal["complete", "incomplete"]
    exit_code: int
    findings: int
    reports: dict[str, str]  # report kind -> path on the worker


def gate_reason(outcome: ReviewOutcome, fail_on: Sequence[Severity]) -> str:
    """Why a review does not pass, in one line ("" when it passes)."""
    if outcome.exit_code == 0:
        return ""
    if outcome.exit_code == CANCELLED_EXIT:
        return cancelled_line(outcome)
    if outcome.status != "complete" or outcome.exit_code != 1:
        return incomplete_line(outcome)
    carried = outcome.pull_request.carried if outcome.pull_request else ()
    found: list[Finding | PriorFinding] = [*outcome.sorted_findings(), *carried]  # carried:
    fail = [  # open on the request from earlier runs
        f"{f.severity.value} {f.path}:{f.start_line} {f.title}"
        for f in found
        if f.severity in fail_on
    ]
    shown = "; ".join(fail[:3])
    more = f" (+{len(fail) - 3} more)" if len(fail) > 3 else ""
    return f"gate failed: {len(fail)} finding(s), {shown}{more}"


def cancelled_line(outcome: ReviewOutcome) -> str:
    """`review cancelled: ` and how far it got (the report lists the files finished)."""
    done = len(outcome.files) - len(outcome.incomplete_files)
    return f"review cancelled: {done} of {counted(len(outcome.files), 'file')} finished"


def incomplete_line(outcome: ReviewOutcome) -> str:
    """`review incomplete: ` and what made it so: its first failed requests, else the warnings
    of its incomplete files, else where to look."""
    incomplete = set(outcome.incomplete_files)
    causes = [error.message for error in outcome.errors] or [
        w.message for w in outcome.warnings if w.path is not None and w.path in incomplete
    ]
    shown = "; ".join(dict.fromkeys(causes[:3])) or "see the report"
    shown = budget_line(outcome) or shown
    count = len(incomplete)
    detail = f"{shown} ({counted(count, 'file')} incomplete)" if count else shown
    return f"review incomplete: {detail}"


def run_reason(run: ReviewRun, fail_on: Sequence[Severity]) -> str:
    """Why a deployed review does not pass: its gate, and a report it could not write."""
    problem = run.report_error and f"report not written: {run.report_error}"
    return "; ".join(reason for reason in (gate_reason(run.outcome, fail_on), problem) if reason)


def run_summary(run: ReviewRun) -> RunSummary:
    """The summary of a deployed review."""
    outcome = run.outcome
    return RunSummary(
        review_id=outcome.review_id,
        status=outcome.status,
        exit_code=run.exit_code,
        findings=len(outcome.findings),
        reports=dict(run.written),
    )


def summary_key(repository: str) -> str:
    """The summary artifact's key: stable for a repository (a new version every run)."""
    return artifact_key(repository, SUMMARY_MODE)


def summary_line(summary: RunSummary) -> str:
    """`review ID: complete, exit code 1, 1 finding; reports on the worker: json PATH, ...`."""
    line = (
        f"review {summary.review_id}: {summary.status}, exit code {summary.exit_code}, "
        f"{counted(summary.findings, 'finding')}"
    )
    reports = ", ".join(f"{kind} {path}" for kind, path in summary.reports.items())
    return f"{line}; reports on the worker: {reports}" if reports else line


def deployed_exit_code(completed: bool, summaries: Sequence[RunSummary]) -> int:
    """The CLI's exit code for a deployed run: 0 when it completed, 1 when it failed on its
    gate's findings alone, 2 for anything else (incomplete, a report not written, an error
    before any review, a crash, a cancelled or unfinished run)."""
    if completed:
        return 0
    codes = {summary.exit_code for summary in summaries}
    return 1 if 1 in codes and codes <= {0, 1} else 2
