"""One model request is one Prefect task run: transient errors retried once, others fail at once.

The task takes a `ProviderHandle` (model settings without the API key) and the request; the key
stays inside the process, in the review's `ProviderPool` (or, in another process, is read from
that process's config and environment). Every attempt is counted by the pool's usage meter.
"""

from __future__ import annotations

from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, TaskRun

from reviewflow.errors import TransientProviderError
from reviewflow.providers.base import ModelRequest, ModelResponse
from reviewflow.providers.pool import ProviderHandle, pool_for

RETRIES = 1
RETRY_DELAY_SECONDS = 2.0


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
def llm_request(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    """Send one model request through the review's provider pool."""
    return request_model(handle, request)


def request_model(handle: ProviderHandle, request: ModelRequest) -> ModelResponse:
    """The request without Prefect: one attempt, counted in the pool's meter."""
    return pool_for(handle).complete(request)
