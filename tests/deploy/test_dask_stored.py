"""A stage whose result is stored is read in the review's process, not sent to a Dask worker
(`tasks.caching.stored`, `StoppingDask.submit`): a task run of its own, Cached, from the same
store. A stage with nothing stored, or refreshed, still goes to the cluster. On an in-process
LocalCluster: the routing is the runner's, whatever carries the tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import LocalCluster, get_worker
from prefect import flow, task

from flows.runners import stopping_dask
from reviewflow.findings.localize import Localized
from tasks.caching import stage_cache_key, stage_options, stored

pytestmark = pytest.mark.usefixtures("prefect_harness")


@task(name="tool_loop", cache_key_fn=stage_cache_key, persist_result=True)
def stage(text: str) -> str:
    """Where the stage's body ran."""
    try:
        get_worker()
    except ValueError:
        return f"{text} here"
    return f"{text} on a worker"


@task(name="localize", cache_key_fn=stage_cache_key, persist_result=True)
def incomplete(text: str) -> Localized:
    """A stage that gave up (its provider kept failing): never reused."""
    return Localized(complete=False)


@flow
def three_stages(home: str) -> list[tuple[str, str | None, str]]:
    """A stage, the same again, again with `--no-cache`, and another; each waited for."""
    cached = stage.with_options(**stage_options(home, refresh=False))
    refreshed = stage.with_options(**stage_options(home, refresh=True))
    seen = []
    for submitted_stage, text in ((cached, "a"), (cached, "a"), (refreshed, "a"), (cached, "b")):
        future = submitted_stage.submit(text)
        future.wait()
        seen.append((type(future).__name__, future.state.name, future.result()))
    return seen


@pytest.fixture
def scheduler() -> Iterator[str]:
    with LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    ) as cluster:
        yield cluster.scheduler_address


def test_a_stored_stage_is_read_here_and_the_others_go_to_the_cluster(
    scheduler: str, tmp_path: Path
) -> None:
    runner: Any = stopping_dask()(address=scheduler)
    seen = three_stages.with_options(task_runner=runner)(str(tmp_path))
    assert seen == [
        ("PrefectDaskFuture", "Completed", "a on a worker"),  # nothing stored: the cluster's
        ("PrefectConcurrentFuture", "Cached", "a on a worker"),  # stored: read here
        ("PrefectDaskFuture", "Completed", "a on a worker"),  # --no-cache: run again there
        ("PrefectDaskFuture", "Completed", "b on a worker"),  # another input: not stored
    ]


@pytest.mark.usefixtures("prefect_tasks")
def test_what_counts_as_stored(tmp_path: Path) -> None:
    cached = stage.with_options(**stage_options(tmp_path, refresh=False))
    assert not stored(cached, {"text": "a"})
    (tmp_path / "cache" / "results").mkdir(parents=True)
    assert not stored(cached, {"text": "a"})
    assert cached.with_options(name="tool_loop")("a") == "a here"  # run here, stored
    assert stored(cached, {"text": "a"})
    assert not stored(cached, {"text": "b"})
    assert not stored(stage.with_options(**stage_options(tmp_path, refresh=True)), {"text": "a"})
    assert not stored(stage, {"text": "a"})  # no storage of ours: Prefect's default
    gave_up = incomplete.with_options(**stage_options(tmp_path, refresh=False))
    assert not gave_up("a").complete  # stored, incomplete
    assert not stored(gave_up, {"text": "a"})  # computed again, on the cluster
