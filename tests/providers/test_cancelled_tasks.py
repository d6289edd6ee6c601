"""A cancelled review's task runs end Cancelled, not Failed (issue 37 item 5): its pool raises
`ReviewCancelled` (not a failed request a stage would note and go past) for the request in
flight and every request after, whether the cancel came by signal in the pool's process or to a
Dask worker (`pool.stop`); the model stages (their requests inside them) return Prefect's
Cancelled state, and a cached stage stores no result for it (the next run does the work again)."""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prefect import task
from prefect.context import TaskRunContext

from reviewflow import cancel
from reviewflow.cancel import Canceller
from reviewflow.errors import ProviderError
from reviewflow.providers import ModelRequest, ProviderPool, UserMessage, pool_for
from reviewflow.providers.pool import ProviderHandle, ReviewCancelled
from tasks.llm import cancellable, llm_request, sender
from tests.wire_server import Delay, Text, WireServer

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


def _in_flight(wire: WireServer, pool: ProviderPool, threads: ThreadPoolExecutor) -> Any:
    pending = threads.submit(pool.complete, REQUEST)
    while not wire.requests():
        time.sleep(0.01)
    return pending


def test_a_stop_on_a_worker_cancels_the_request_in_flight_and_every_later_one(
    wire: WireServer,
) -> None:
    wire.script("openai", [Delay(30), Text("never")])
    pool = ProviderPool(wire.settings("openai"), 2)
    with ThreadPoolExecutor(max_workers=1) as threads:
        pending = _in_flight(wire, pool, threads)
        pool.registry.stop()  # what a Dask worker is told: the run's pools there stop
        with pytest.raises(ReviewCancelled, match="the review was cancelled") as caught:
            pending.result(timeout=5)
    assert not isinstance(caught.value, ProviderError)  # no stage takes it for a failed request
    with pytest.raises(ReviewCancelled):
        pool_for(pool.handle)  # a later stage on that worker: not a pool of its own again
    assert len(wire.requests()) == 1


def test_a_signal_cancels_the_pool_in_its_own_process_which_the_review_still_reads(
    canceller: Canceller, wire: WireServer
) -> None:
    wire.script("openai", [Delay(30), Text("never")])
    pool = ProviderPool(wire.settings("openai"), 2)
    with ThreadPoolExecutor(max_workers=1) as threads:
        pending = _in_flight(wire, pool, threads)
        with cancel.deferred():
            canceller.handle(signal.SIGINT, None)
        with pytest.raises(ReviewCancelled):
            pool.complete(REQUEST)  # sends nothing more
        assert pool_for(pool.handle) is pool  # the review closes it and reads its meter
        pool.close()  # the review abandons what is in flight
        with pytest.raises(ReviewCancelled):
            pending.result(timeout=5)
    with pytest.raises(ReviewCancelled):
        pool_for(pool.handle)  # a stage that starts now is cancelled too
    assert len(wire.requests()) == 1 and pool.meter.totals().requests == 1


def test_a_request_the_cancel_stops_ends_its_stage_s_task_run_cancelled(
    prefect_tasks: None, canceller: Canceller, wire: WireServer
) -> None:
    @task(name="stage", retries=0)
    @cancellable
    def stage(handle: ProviderHandle) -> str:  # as the model stages are declared
        return llm_request(handle, REQUEST).text

    wire.script("openai", [Text("before")])
    with ProviderPool(wire.settings("openai"), 1) as pool:
        send = sender(pool.handle)
        assert send(REQUEST).text == "before"
        with cancel.deferred():
            canceller.handle(signal.SIGINT, None)
        state = stage(pool.handle, return_state=True)
        assert state.is_cancelled(), state
        assert state.message and "the review was cancelled" in state.message
        with pytest.raises(ReviewCancelled):
            send(REQUEST)  # the stage calling it meets the cancel, not a failed request
    assert len(wire.requests()) == 1


def _key(context: TaskRunContext, parameters: dict[str, Any]) -> str:
    return f"stage-{parameters['name']}"


def test_a_cancelled_stage_stores_no_result(prefect_tasks: None, tmp_path: Path) -> None:
    """Cached as the model stages are: its result is stored under its key when it completes,
    never when the cancel stops it (a re-run would take that for the stage's answer)."""

    @task(cache_key_fn=_key, persist_result=True, result_serializer="json", result_storage=tmp_path)
    @cancellable
    def stage(name: str, stop: bool) -> str:
        if stop:
            raise ReviewCancelled("the review was cancelled")
        return name.upper()

    assert stage("done", False) == "DONE"
    assert (tmp_path / "stage-done").exists()
    state = stage("cut", True, return_state=True)
    assert state.is_cancelled() and state.message == "the review was cancelled"
    assert not (tmp_path / "stage-cut").exists()
    assert stage("cut", False) == "CUT"  # not taken from a cache
