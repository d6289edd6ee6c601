"""The nightly review of release branches: what is new on each since its last completed review.

Each branch's reviewed head is kept in a Prefect Variable per repository and branch; the first
review of a branch starts at its merge-base with the base branch. One `review` subflow per
branch with new commits, one aggregate artifact; a branch's Variable moves only when its review
completes, and the run ends Failed, naming the branches, when a gate fails or a review is
incomplete.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, Failed, State
from prefect.variables import Variable
from pydantic import BaseModel, ConfigDict

from flows.deployed import DEPLOYMENT_CI, deployed_config, run_reason
from flows.review import run_review
from reviewflow.ci import ci_variables
from reviewflow.config import Config, home_dir
from reviewflow.errors import ConfigError, ReviewError
from reviewflow.git.branches import commit_of, is_ancestor, matching_branches, merge_base
from reviewflow.git.mirror import local_repository
from reviewflow.request import ReviewRequest

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


def slug(text: str, limit: int = 40) -> str:
    """Lowercase letters, digits and dashes (artifact keys and Variable names accept them)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "x"


def variable_name(repository: str, branch: str) -> str:
    """The Variable holding the last reviewed head of `branch` in `repository`."""
    digest = hashlib.sha256(f"{repository}\0{branch}".encode()).hexdigest()[:16]
    name = slug(repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"), 30)
    return f"{VARIABLE_PREFIX}-{name}-{slug(branch)}-{digest}"


def last_reviewed(repository: str, branch: str) -> str | None:
    value: Any = Variable.get(variable_name(repository, branch))
    return value.get("head") if isinstance(value, dict) else None


def mark_reviewed(repository: str, branch: str, head: str) -> None:
    value = {"repository": repository, "branch": branch, "head": head}
    Variable.set(variable_name(repository, branch), value, overwrite=True)


def review_branch(
    repository: str, root: Path, branch: str, head: str, base: str, config: Config
) -> BranchReview:
    """Review what is new on `branch` and move its Variable when that review completes."""
    env = os.environ
    last = last_reviewed(repository, branch)
    since = last if last and is_ancestor(root, last, head) else merge_base(root, base, head)
    if since is None:
        reason = f"no common history with the base branch {base[:12]}"
        return BranchReview(
            branch=branch, head=head, since=None, status="failed", exit_code=2, reason=reason
        )
    if since == head:
        mark_reviewed(repository, branch, head)
        return BranchReview(branch=branch, head=head, since=since, status="up-to-date")
    request = ReviewRequest.from_flags(
        str(root),
        from_ref=since,
        to_ref=head,
        home=str(home_dir(env)),
        ci_variables=ci_variables(env) or (DEPLOYMENT_CI,),
    )
    try:
        run = run_review(request, config, name=f"review {branch}")
    except ReviewError as exc:
        reason = " ".join(str(exc).split())
        return BranchReview(
            branch=branch,
            head=head,
            since=since,
            status="failed",
            exit_code=exc.exit_code,
            reason=reason,
        )
    outcome = run.outcome
    reviewed = outcome.status == "complete" and not run.report_error
    if reviewed:  # else the next night tries again (its answers are cached)
        mark_reviewed(repository, branch, head)
    return BranchReview(
        branch=branch,
        head=head,
        since=since,
        status="reviewed" if reviewed else "failed",
        exit_code=run.exit_code,
        findings=len(outcome.findings),
        review_id=outcome.review_id,
        reason=run_reason(run, config.review.fail_on),
    )


def summary_markdown(repository: str, base: str, rows: list[BranchReview]) -> str:
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


@flow(name="release-review", log_prints=False, validate_parameters=True)
def release_review(
    repository: str,
    branches: list[str] | None = None,
    base: str = "main",
    overrides: dict[str, Any] | None = None,
) -> State:
    """Review what is new on every branch matching `branches` (default `release/*`)."""
    env = dict(os.environ)
    patterns = branches or ["release/*"]
    config = deployed_config(overrides, env)
    root = local_repository(repository, home_dir(env))
    base_sha = commit_of(root, base)
    if base_sha is None:
        raise ConfigError(
            f"invalid value for 'base': {base!r} (accepted: a branch of the repository)"
        )
    rows = [
        review_branch(repository, root, name, head, base_sha, config)
        for name, head in matching_branches(root, patterns)
    ]
    create_markdown_artifact(
        key=f"release-review-{slug(repository.rstrip('/').rsplit('/', 1)[-1])}",
        markdown=summary_markdown(repository, base, rows),
        description="reviewflow nightly release review",
    )
    data = [row.model_dump(mode="json") for row in rows]
    failing = [row for row in rows if row.exit_code != 0]
    if failing:
        names = "; ".join(f"{row.branch}: {row.reason}" for row in failing)
        get_run_logger().error("release review failed for: %s", names)
        return Failed(
            message=f"release review failed for {len(failing)} branch(es): {names}", data=data
        )
    return Completed(message=f"{len(rows)} branch(es) passed", data=data)
