"""Before the review: read the request (a bad token or a missing request fails here, before
any model request), decide what to review, and what people dismissed."""

from __future__ import annotations

from pathlib import Path

from reviewflow.publish.client import PlatformClient
from reviewflow.publish.incremental import descends, renames, split_prior
from reviewflow.pullrequest.context import (
    PullRequestContext,
    ReviewScope,
    dismissed_in,
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
    prior = prior_state(state)
    context = PullRequestContext(
        ref=ref,
        info=state.info,
        base=base,
        head=head,
        scope=ReviewScope.FLAGS if flags_range else ReviewScope.FULL,
        dismissed=dismissed_in(state.threads),
        renames=renames(root, base, head),
        run_url=run_url,
    )
    if flags_range or prior is None or not descends(root, prior.head, head):
        return context
    dismissed = context.dismissed
    open_prior = [f for f in prior.findings if f.fingerprint not in dismissed]
    carried, rereviewed = split_prior(root, prior.head, head, open_prior)
    return context.model_copy(
        update={
            "scope": ReviewScope.INCREMENTAL,
            "previous_head": prior.head,
            "carried": carried,
            "rereviewed": rereviewed,
        }
    )
