"""One model request is one Prefect task run: transient errors retried once, others fail at once.

The task takes a `ProviderHandle` (model settings without the API key) and the request; the key
stays inside the process, in the review's `ProviderPool` (or, in another process, is read from
that process's config and environment); `tasks.pools.pool_of` finds the pool.

Accounting does not depend on which process ran the task: the response carries `attempts` (the
task run's run count: 1, or 2 after a retry), and so does a final `ProviderFailure` (its
`attempts`, see `failures.attempts_of`). The pool's meter counts the attempts made in the pool's
own process only, as a convenience.

A cancelled review's task runs end Cancelled, on threads and on Dask alike: a request or stage
that meets the cancel (`ReviewCancelled`: its pool stopped, the request in flight abandoned)
returns Prefect's Cancelled state instead of failing (`cancellable`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, TaskRun
from prefect.context import TaskRunContext
from prefect.states import Cancelled
from prefect.transactions import get_transaction

from reviewflow.errors import TransientProviderError
from reviewflow.providers.failures import ProviderFailure, never_reached
from reviewflow.providers.messages import ModelRequest, ModelResponse
from reviewflow.providers.pool import ProviderHandle, ReviewCancelled
from reviewflow.review.records import Send
from tasks.caching import as_is
from tasks.pools import pool_of

RETRIES = 1
RETRY_DELAY_SECONDS = 2.0

P = ParamSpec("P")
R = TypeVar("R")


def cancellable(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` as a task's body that ends Cancelled when the review's cancel stops it
    (`ReviewCancelled`), not Failed (nor Completed with what it had: the cancel cut it)."""

    @functools.wraps(fn)
    def body(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except ReviewCancelled as exc:
            return cast(R, cancelled(str(exc)))

    return body


def cancelled(message: str) -> State[Any]:
    """The Cancelled state a task run returns to end in it. Its transaction stores nothing
    (as Prefect does for a Failed state): a cached stage's next run does the work again."""
    transaction = get_transaction()
    if transaction is not None:
        transaction.write_on_commit = False
    return Cancelled(message=message)


def retry_transient(task: Task[Any, Any], task_run: TaskRun, state: State[Any]) -> bool:
    """Retry only a TransientProviderError (timeout, connection, 408, 429, 5xx, empty answer)."""
    outcome = state.result(raise_on_failure=False)
    return isinstance(outcome, TransientProviderError)


@task(
    name="llm_request",
    retries=RETRIES,
    retry_delay_seconds=RETRY_DELAY_SECONDS,
    retry_condition_fn=retry_transient,
    cache_policy=NO_CACHE,
    persist_result=False,
    log_prints=False,
)
@cancellable
def llm_request(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    """Send one model request through the review's provider pool, noting the attempt count."""
    attempt = _attempt()
    try:
        response = request_model(handle, request)
    except ProviderFailure as exc:
        exc.attempts = attempt - 1 if never_reached(exc) else attempt  # this one never left
        raise
    return response.model_copy(update={"attempts": attempt})


def request_model(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    """The request without Prefect: one attempt, counted in the pool's meter."""
    return pool_of(handle).complete(request)


def _attempt() -> int:
    """This attempt's number: the `llm_request` task run's run count, 1 outside Prefect."""
    context = TaskRunContext.get()
    if context is None or context.task.fn is not llm_request.fn:
        return 1
    return max(1, context.task_run.run_count)


def sender(handle: ProviderHandle, path: str | None = None) -> Send:
    """The `Send` a stage uses: each request one `llm_request` task run (nested in the stage's).
    With `path`, the review's progress display is told that file is in progress as its
    requests go out (in the process of the review's pool; elsewhere there is none). A request
    the review's budget would refuse raises `BudgetExceeded` here, without a task run."""
    observer = pool_of(handle).observer if path is not None else None

    def send(request: ModelRequest) -> ModelResponse:
        budget = pool_of(handle).budget  # (a closed pool raises here, as the task would)
        if budget is not None:  # refused here: no task run (the pool checks again)
            budget.check(request)
        if observer is not None and path is not None:
            observer.file_started(path)
        answer = llm_request(as_is(handle), as_is(request))
        if isinstance(answer, State):  # it returned its Cancelled state: the stage ends so too
            raise ReviewCancelled(answer.message or "the review was cancelled")
        return answer

    return send
