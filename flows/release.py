"""The nightly review of release branches: what is new on each since its last completed review.

Each branch's reviewed head is kept in a Prefect Variable per repository and branch; the first
review of a branch starts at its merge-base with the base branch. One `review` subflow per
branch with new commits, one aggregate artifact; a branch's Variable moves only when its review
completes, and only forward (the deployment has no concurrency limit: runs of one branch may
overlap on several workers), and the run ends Failed, naming the branches, when a gate fails or
a review is incomplete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, State
from prefect.variables import Variable

from flows.deployed import DEPLOYMENT_CI, deployed_config, failed
from flows.review_flow import run_review
from reviewflow.ci import ci_variables
from reviewflow.config import Config, home_dir
from reviewflow.errors import ConfigError, ReviewError
from reviewflow.git.branches import commit_of, is_ancestor, matching_branches, merge_base
from reviewflow.git.mirror import local_repository
from reviewflow.report.release import (
    BranchReview,
    release_artifact_key,
    release_passed,
    release_reason,
    reviewed_branch,
    summary_markdown,
    variable_name,
)
from reviewflow.request import ReviewRequest


def last_reviewed(repository: str, branch: str) -> str | None:
    value: Any = Variable.get(variable_name(repository, branch))
    return value.get("head") if isinstance(value, dict) else None


def mark_reviewed(root: Path, repository: str, branch: str, head: str) -> None:
    """Record `head` as the branch's reviewed head, unless a run of the same branch that
    overlapped this one already recorded a later commit the branch still holds (the Variable
    only moves forward; a branch rewound to an earlier commit moves it back)."""
    last = last_reviewed(repository, branch)
    tip = commit_of(root, branch)
    if (
        last
        and tip
        and last != head
        and is_ancestor(root, head, last)
        and is_ancestor(root, last, tip)
    ):
        return  # a later commit, still on the branch, is recorded already
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
        mark_reviewed(root, repository, branch, head)
        return BranchReview(branch=branch, head=head, since=since, status="up-to-date")
    request = ReviewRequest.from_flags(
        str(root),
        from_ref=since,
        to_ref=head,
        home=str(home_dir(env)),
        ci_variables=ci_variables(env) or (DEPLOYMENT_CI,),
    )
    try:
        run = run_review(request, config)  # its flow run is named by the review's ID
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
    row = reviewed_branch(branch, head, since, run, config.review.fail_on)
    if row.status == "reviewed":  # else the next night tries again (its answers are cached)
        mark_reviewed(root, repository, branch, head)
    return row


@flow(name="release-review", log_prints=False, validate_parameters=True)
def release_review(
    repository: str,
    branches: list[str] | None = None,
    base: str = "main",
    overrides: dict[str, Any] | None = None,
) -> State:
    """Review what is new on every branch matching `branches` (default `release/*`).

    Ends as `ci_review` does: Completed with the branch rows as its result, or Failed with the
    reason naming each failing branch (`failed`); the rows are always its Markdown artifact.
    """
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
        key=release_artifact_key(repository),
        markdown=summary_markdown(repository, base, rows),
        description="reviewflow nightly release review",
    )
    reason = release_reason(rows)
    if reason:
        get_run_logger().error(reason)
        return failed(reason)
    return Completed(
        message=release_passed(rows), data=[row.model_dump(mode="json") for row in rows]
    )
