"""One model request, sent from inside its stage's task run: transient errors retried once
after `RETRY_DELAY_SECONDS`, others fail at once.

A request is not a task run of its own (it was, until issue 40): at one finding a file, four of
a file's seven task runs were requests, and each task run costs the Prefect database three
states (a 10,000-file review would have passed 200 MB) and a Dask worker its reporting. The
request is recorded where a reader looks for it: the report's `process` section (its stage,
attempts, timing and usage) and the stage's own task run, which fails with the request's error.

`llm_request` takes a `ProviderHandle` (model settings without the API key) and the request; the
key stays inside the process, in the review's `ProviderPool` (or, in another process, is read
from that process's config and environment); `tasks.pools.pool_of` finds the pool.

Accounting does not depend on which process sent it: the response carries `attempts` (1, or 2
after a retry), and so does a final `ProviderFailure` (its `attempts`, see
`failures.attempts_of`). The pool's meter counts the attempts made in the pool's own process
only, as a convenience.

A cancelled review's stages end Cancelled, on threads and on Dask alike: a request or stage
that meets the cancel (`ReviewCancelled`: its pool stopped, the request in flight abandoned)
returns Prefect's Cancelled state instead of failing (`cancellable`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from prefect.client.schemas.objects import State
from prefect.states import Cancelled
from prefect.transactions import get_transaction

from reviewflow.errors import TransientProviderError
from reviewflow.providers.failures import ProviderFailure, never_reached
from reviewflow.providers.messages import ModelRequest, ModelResponse
from reviewflow.providers.pool import ProviderHandle, ReviewCancelled
from reviewflow.review.records import Send
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


def retry_transient(error: BaseException) -> bool:
    """Retry only a TransientProviderError (timeout, connection, 408, 429, 5xx, empty answer)."""
    return isinstance(error, TransientProviderError)


def llm_request(
    handle: ProviderHandle, request: ModelRequest, *, delay: float = RETRY_DELAY_SECONDS
) -> ModelResponse:
    """Send one model request through the review's provider pool, retried `RETRIES` times
    after `delay` seconds on a transient failure, noting the attempt count. A cancel during
    the delay stops the retry (the pool, stopped, refuses it: `ReviewCancelled`)."""
    attempt = 1
    while True:
        try:
            response = request_model(handle, request)
        except ProviderFailure as exc:
            exc.attempts = attempt - 1 if never_reached(exc) else attempt  # this one never left
            if attempt > RETRIES or not retry_transient(exc):
                raise
        except TransientProviderError:
            if attempt > RETRIES:
                raise
        else:
            return response.model_copy(update={"attempts": attempt})
        time.sleep(delay)
        attempt += 1


def request_model(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    """The request without a retry: one attempt, counted in the pool's meter."""
    return pool_of(handle).complete(request)


def sender(handle: ProviderHandle, path: str | None = None) -> Send:
    """The `Send` a stage uses: each request one `llm_request` (inside the stage's task run).
    With `path`, the review's progress display is told that file is in progress as its
    requests go out (in the process of the review's pool; elsewhere there is none). A request
    the review's budget would refuse raises `BudgetExceeded` here, without a task run."""
    observer = pool_of(handle).observer if path is not None else None

    def send(request: ModelRequest) -> ModelResponse:
        budget = pool_of(handle).budget  # (a closed pool raises here, as the task would)
        if budget is not None:  # refused here, with no attempt (the pool checks again)
            budget.check(request, handle.model)
        if observer is not None and path is not None:
            observer.file_started(path)
        return llm_request(handle, request)

    return send
