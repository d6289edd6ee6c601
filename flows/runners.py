"""Where a review's mapped stages run: threads here, or a Dask cluster (`review.task_runner`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect.task_runners import ThreadPoolTaskRunner

from reviewflow.config import Config, TaskRunner
from reviewflow.config.schema import ENV_PREFIX
from tasks.caching import as_is

LOCAL_DASK_WORKERS = 2


def task_runner_for(config: Config) -> Any:
    """The task runner for `config` (its API key, if any, is still in `config.model`).

    `dask` with `review.dask_address` uses that cluster: its workers take the key from their
    own environment. Without an address, a LocalCluster of worker processes is started for the
    run, and only those processes get the key, in their environment (never as a task input).
    """
    if config.review.task_runner is TaskRunner.THREAD:
        return threads(config.review.concurrency)
    from prefect_dask import DaskTaskRunner  # deferred: dask is only needed here

    if config.review.dask_address:
        return DaskTaskRunner(address=config.review.dask_address)
    per_worker = max(1, -(-config.review.concurrency // LOCAL_DASK_WORKERS))
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": LOCAL_DASK_WORKERS,
            "threads_per_worker": per_worker,
            "processes": True,
            "dashboard_address": None,
            "host": "127.0.0.1",
            "env": worker_environment(config),
        }
    )


def threads(max_workers: int) -> Any:
    """A thread pool runner: the stages and their model requests run in this process."""
    return ThreadPoolTaskRunner(max_workers=max_workers)


def submitted(config: Config) -> Callable[[Any], Any]:
    """How a value is passed to `Task.submit` on `config`'s runner: `as_is` on threads; as it is
    on Dask, whose transport turns Prefect's annotations into plain tuples."""
    return as_is if config.review.task_runner is TaskRunner.THREAD else _unchanged


def _unchanged(value: Any) -> Any:
    return value


def worker_environment(config: Config) -> dict[str, str]:
    """What a local Dask worker process needs in its environment: the review's API key."""
    key = config.model.api_key
    return {} if key is None else {ENV_PREFIX + "API_KEY": key.get_secret_value()}
