"""The nightly release review in words: one row per branch, its Markdown table, how it ends."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from reviewflow.models import Severity
from reviewflow.report.gate import run_reason
from reviewflow.report.outcome import ReviewRun

VARIABLE_PREFIX = "reviewflow-nightly"


class BranchReview(BaseModel):
    """What the nightly run did with one branch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    branch: str
    head: str
    since: str | None  # the first commit not reviewed is after this one
    status: Literal["reviewed", "up-to-date", "failed"]
    exit_code: int = 0
    findings: int = 0
    review_id: str | None = None
    reason: str = ""


def reviewed_branch(
    branch: str, head: str, since: str, run: ReviewRun, fail_on: Sequence[Severity]
) -> BranchReview:
    """The row of a branch whose range was reviewed: `reviewed` when the review completed and
    its reports were written (its gate may still have failed), else `failed`."""
    return BranchReview(
        branch=branch,
        head=head,
        since=since,
        status="reviewed" if is_reviewed(run) else "failed",
        exit_code=run.exit_code,
        findings=len(run.outcome.findings),
        review_id=run.outcome.review_id,
        reason=run_reason(run, fail_on),
    )


def is_reviewed(run: ReviewRun) -> bool:
    """Whether the branch's reviewed head may move (else the next night tries again)."""
    return run.outcome.status == "complete" and not run.report_error


def slug(text: str, limit: int = 40) -> str:
    """Lowercase letters, digits and dashes (artifact keys and Variable names accept them)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "x"


def variable_name(repository: str, branch: str) -> str:
    """The Variable holding the last reviewed head of `branch` in `repository`."""
    digest = hashlib.sha256(f"{repository}\0{branch}".encode()).hexdigest()[:16]
    name = slug(repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"), 30)
    return f"{VARIABLE_PREFIX}-{name}-{slug(branch)}-{digest}"


def release_artifact_key(repository: str) -> str:
    """The key of the nightly's Markdown artifact for `repository`."""
    return f"release-review-{slug(repository.rstrip('/').rsplit('/', 1)[-1])}"


def summary_markdown(repository: str, base: str, rows: Sequence[BranchReview]) -> str:
    """The per-branch table of one nightly run."""
    lines = [
        f"# Nightly release review of `{repository}`",
        "",
        f"Base branch: `{base}`. Branches: {len(rows)}.",
        "",
        "| branch | reviewed | status | exit | findings | review | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        span = f"{row.since[:10]}..{row.head[:10]}" if row.since else row.head[:10]
        reason = row.reason.replace("|", "\\|")
        lines.append(
            f"| `{row.branch}` | {span} | {row.status} | {row.exit_code} | {row.findings} "
            f"| {row.review_id or ''} | {reason} |"
        )
    return "\n".join(lines) + "\n"


def release_reason(rows: Sequence[BranchReview]) -> str:
    """Why a nightly run fails, naming each failing branch ("" when every branch passed)."""
    failing = [row for row in rows if row.exit_code != 0]
    if not failing:
        return ""
    names = "; ".join(f"{row.branch}: {row.reason}" for row in failing)
    return f"release review failed for {len(failing)} branch(es): {names}"


def release_passed(rows: Sequence[BranchReview]) -> str:
    """The state message of a nightly run whose branches all passed."""
    return f"{len(rows)} branch(es) passed"
