"""After the reports, publish: the findings on the pull/merge request, its summary in place.

Never cached (it writes to the platform); retried for what passes (an API that is down, a rate
limit: waited for first, as `retry-after` or the reset time says, bounded), never for a refusal.
The token is not an input: the review's `publishing` block holds it in the review's context, in
which this task runs (called from the flow's body, never submitted): `reviewflow.publish.tokens`.
"""

from __future__ import annotations

import time
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import TaskRun
from prefect.context import TaskRunContext
from prefect.states import State

from reviewflow.errors import PublishError, TransientPublishError
from reviewflow.publish.publisher import publish
from reviewflow.publish.tokens import client_for
from reviewflow.pullrequest.context import PullRequestContext
from reviewflow.pullrequest.models import PublishResult
from reviewflow.report.outcome import ReviewOutcome

RETRIES = 3
MAX_WAIT_S = 120.0  # the longest one rate limit is waited for; longer, the publishing fails


def _transient(task: Task[..., Any], task_run: TaskRun, state: State) -> bool:
    return isinstance(state.result(raise_on_failure=False), TransientPublishError)


@task(
    name="publish",
    cache_policy=NO_CACHE,
    retries=RETRIES,
    retry_delay_seconds=0,  # the wait is the platform's: `retry-after`, slept before the retry
    retry_condition_fn=_transient,
)
def publish_findings(outcome: ReviewOutcome, context: PullRequestContext) -> PublishResult:
    """Post what is new, resolve what is fixed, write the summary (each attempt re-reads)."""
    try:
        return publish(client_for(context.ref), context, outcome)
    except TransientPublishError as error:
        if error.wait_s > MAX_WAIT_S:  # not worth holding the CI job for: fail now, no retry
            raise PublishError(f"{error} (retry in {error.wait_s:.0f} s)") from None
        run = TaskRunContext.get()
        if run is not None and run.task_run.run_count <= RETRIES:  # a retry follows: wait first
            time.sleep(error.wait_s)
        raise
