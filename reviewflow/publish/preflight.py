"""Before the review: read the request (a bad token or a missing request fails here, before
any model request), decide what to review, and what people dismissed."""

from __future__ import annotations

from pathlib import Path

from reviewflow.errors import ConfigError
from reviewflow.git.branches import commit_of, merge_base
from reviewflow.git.runner import run_git
from reviewflow.publish.client import PlatformClient
from reviewflow.publish.incremental import descends, renames, split_prior
from reviewflow.publish.platforms import spec_of
from reviewflow.pullrequest.context import (
    PullRequestContext,
    ReviewScope,
    dismissed_clusters,
    dismissed_in,
    open_in_threads,
    prior_state,
)
from reviewflow.pullrequest.models import EventShas, RequestRef


def prepare(
    ref: RequestRef,
    shas: EventShas,
    client: PlatformClient,
    root: Path,
    *,
    flags_range: bool = False,
    run_url: str | None = None,
) -> PullRequestContext:
    """The context of a review of `ref` in the clone `root`: the whole request (first run,
    a force-push, a merge of the target branch), only what is new since the head the summary
    recorded (nothing at all on the same head), or the range the flags named (`flags_range`)."""
    state = client.read()
    base = shas.base or state.info.base_sha
    head = shas.head or state.info.head_sha
    check_history(root, ref, base, head)
    prior = prior_state(state)
    context = PullRequestContext(
        ref=ref,
        info=state.info,
        base=base,
        head=head,
        scope=ReviewScope.FLAGS if flags_range else ReviewScope.FULL,
        dismissed=dismissed_in(state.threads),
        dismissed_as=dismissed_clusters(state.threads),
        renames=renames(root, base, head),
        run_url=run_url,
    )
    if flags_range or prior is None or not descends(root, prior.head, head):
        return context
    open_prior = [f for f in prior.findings if context.dismissal_of(f.fingerprints) is None]
    carried, rereviewed = split_prior(root, prior.head, head, open_prior)
    # open threads the state does not hold (a person opened them again, or beyond its cap):
    # open at once, where they were posted, until a person or a whole review closes them
    by_thread = open_in_threads(state.threads, {f.fingerprint for f in prior.findings})
    return context.model_copy(
        update={
            "scope": ReviewScope.INCREMENTAL,
            "previous_head": prior.head,
            "carried": (*carried, *by_thread),
            "rereviewed": rereviewed,
        }
    )


def check_history(root: Path, ref: RequestRef, base: str, head: str) -> None:
    """ConfigError naming what the clone `root` lacks to review the request: its head or base
    commit (a shallow clone, or the source branch not fetched), or their merge base."""
    spec = spec_of(ref.platform)
    missing = [(name, sha) for name, sha in (("head", head), ("base", base)) if not _has(root, sha)]
    if not missing and merge_base(root, base, head) is not None:
        return
    fix = f"fetch with full history ({spec.full_history}, or git fetch --unshallow)"
    if run_git(root, ["rev-parse", "--is-shallow-repository"]).strip() == b"true":
        lacks = " and ".join(f"{name} {sha[:12]}" for name, sha in missing) or "merge base"
        verb = "are" if len(missing) > 1 else "is"
        raise ConfigError(
            f"this clone is shallow: the {spec.noun}'s {lacks} {verb} not in it; {fix}"
        )
    if missing:
        name, sha = missing[0]
        how = "its source and target branches"
        if spec.request_head:
            how = f"git fetch origin {spec.request_head.format(n=ref.number)}"
        raise ConfigError(
            f"the {spec.noun}'s {name} commit {sha[:12]} is not in this clone: fetch it ({how})"
        )
    raise ConfigError(f"the {spec.noun}'s base {base[:12]} and head {head[:12]} share no history")


def _has(root: Path, sha: str) -> bool:
    return commit_of(root, sha) is not None
