"""The per-review pool: bounded requests in flight, every attempt metered, key-free handles,
and accounting that does not depend on which process sent the request."""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
from pydantic import SecretStr

from reviewflow.config import Config, ModelSettings, ReviewSettings
from reviewflow.errors import PermanentProviderError, TransientProviderError
from reviewflow.providers import (
    ModelRequest,
    ModelResponse,
    ProviderHandle,
    ProviderPool,
    Usage,
    UserMessage,
    pool_for,
)
from reviewflow.providers.budget import Budget
from reviewflow.providers.failures import RequestAbandonedError, UnsendableRequestError, usage_of
from reviewflow.providers.pool import PoolClosedError
from reviewflow.providers.registry import PoolRegistry
from tests.wire_server import TEST_KEY, Delay, Empty, HttpError, Text, WireServer, WireUsage

# handles resolve in a flow run's provider pools, active in each test's context
pytestmark = pytest.mark.usefixtures("pools")

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_requests_in_flight(wire: WireServer, concurrency: int) -> None:
    wire.script("openai", [Delay(0.25) for _ in range(6)])
    review = ReviewSettings.model_validate({"concurrency": concurrency})
    config = Config(model=wire.settings("openai"), review=review)
    with ProviderPool.from_config(config) as pool, ThreadPoolExecutor(max_workers=6) as threads:
        list(threads.map(lambda _: pool.complete(REQUEST), range(6)))
    assert wire.max_in_flight == concurrency
    assert pool.meter.totals().requests == 6


def test_meter_counts_failed_attempts_and_sums_usage(wire: WireServer) -> None:
    usage = WireUsage(prompt=10, completion=2, cache_read=4)
    wire.script("anthropic", [Text(usage=usage), HttpError(400), Text(usage=usage)])
    with ProviderPool(wire.settings("anthropic"), 2) as pool:
        pool.complete(REQUEST)
        with pytest.raises(PermanentProviderError):
            pool.complete(REQUEST)
        pool.complete(REQUEST)
    totals = pool.meter.totals()
    assert totals.requests == 3
    assert (totals.prompt_tokens, totals.completion_tokens, totals.cache_read_tokens) == (28, 4, 8)
    assert totals.total_tokens == 32


def test_handle_holds_no_key_and_is_resolved_in_process(wire: WireServer) -> None:
    wire.script("gemini", [Text()])
    pool = ProviderPool(wire.settings("gemini"), 2)
    handle = pool.handle
    assert TEST_KEY not in handle.model_dump_json() and TEST_KEY not in repr(handle)
    assert handle.pid == os.getpid()
    assert pool_for(handle) is pool
    pool_for(handle).complete(REQUEST)
    pool.close()
    assert pool.meter.totals().requests == 1


def test_a_closed_pool_fails_loudly_in_its_own_process(wire: WireServer) -> None:
    pool = ProviderPool(wire.settings("openai"), 1)
    pool.close()
    with pytest.raises(PoolClosedError, match=f"provider pool {pool.id} is closed") as caught:
        pool_for(pool.handle)  # no silent second pool (and meter) behind the review's back
    assert isinstance(caught.value, PermanentProviderError)
    with pytest.raises(PoolClosedError):
        pool.complete(REQUEST)
    assert wire.requests() == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "gemini"])
def test_closing_the_pool_abandons_its_requests_in_flight_at_once(
    wire: WireServer, protocol: str
) -> None:
    wire.script(protocol, [Delay(30)])
    pool = ProviderPool(wire.settings(protocol), 1)
    with ThreadPoolExecutor(max_workers=1) as threads:
        pending = threads.submit(pool.complete, REQUEST)
        while not wire.requests():
            time.sleep(0.01)
        started = time.monotonic()
        pool.close()  # Ctrl-C
        with pytest.raises(RequestAbandonedError, match="request abandoned") as caught:
            pending.result(timeout=5)
    assert time.monotonic() - started < 2.0
    assert not isinstance(caught.value, TransientProviderError)  # llm_request never retries it
    assert pool.meter.totals().requests == 1


def test_a_process_without_the_pool_builds_its_own_from_its_environment(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.script("gemini", [Text()])
    monkeypatch.setenv("GEMINI_API_KEY", TEST_KEY)
    inherited = ProviderPool(wire.settings("gemini", key="sk-parent-process-key"), 2)
    inherited.pid = -1  # as a forked worker inherits its parent's pool: never used there
    foreign = inherited.handle.model_copy(update={"pid": -1})  # made by another process
    rebuilt = pool_for(foreign)
    assert rebuilt is not inherited and rebuilt.id == foreign.pool_id
    assert pool_for(foreign) is rebuilt
    rebuilt.complete(REQUEST)
    rebuilt.close()
    inherited.close()
    assert [r.credential for r in wire.requests("gemini")] == [TEST_KEY]


def _complete_elsewhere(handle: ProviderHandle) -> tuple[int, ModelResponse]:
    """Run in a spawned process: resolve the handle there, in that process's registry of the
    run (a Dask worker's is its run's plugin), and send one request."""
    with PoolRegistry(handle.registry) as registry:
        return os.getpid(), pool_for(handle, registry).complete(REQUEST)


def test_a_worker_process_reports_its_attempts_in_the_response(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.script("openai", [Text("from a worker", usage=WireUsage(prompt=5, completion=1))])
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    spawn = multiprocessing.get_context("spawn")
    with (
        ProviderPool(wire.settings("openai"), 1) as pool,
        ProcessPoolExecutor(max_workers=1, mp_context=spawn) as workers,
    ):
        pid, response = workers.submit(_complete_elsewhere, pool.handle).result(timeout=60)
    assert pid != os.getpid()
    assert response.text == "from a worker" and response.attempts == 1
    assert response.usage.total_tokens == 6  # the review totals from results like this one
    assert pool.meter.totals().requests == 0  # the parent's meter never saw that attempt
    assert wire.requests("openai")[0].credential == TEST_KEY


@pytest.mark.parametrize("protocol", ["openai", "gemini"])
def test_meter_adds_the_usage_of_a_rejected_answer(wire: WireServer, protocol: str) -> None:
    billed, answered = WireUsage(prompt=30, completion=5), WireUsage(prompt=10, completion=2)
    wire.script(protocol, [Empty(usage=billed), Text(usage=answered)])
    with ProviderPool(wire.settings(protocol), 1) as pool:
        with pytest.raises(TransientProviderError, match="empty answer") as caught:
            pool.complete(REQUEST)
        assert usage_of(caught.value) == Usage.reported(prompt=30, completion=5)
        pool.complete(REQUEST)
    totals = pool.meter.totals()
    assert (totals.requests, totals.prompt_tokens, totals.completion_tokens) == (2, 40, 7)
    assert totals.total_tokens == 47


def test_a_request_that_never_left_is_neither_metered_nor_spent() -> None:
    """Issue 37 item 1: a request that could not be built reached no server."""
    settings = ModelSettings.model_construct(  # an endpoint the config would refuse
        protocol="openai", name="m", endpoint="http://[::1/v1", timeout=2.0, api_key=SecretStr("k")
    )
    budget = Budget(50_000, None, None, lambda request: 1000, completion_reserve=0)
    with ProviderPool(settings, 1, budget=budget) as pool:
        with pytest.raises(UnsendableRequestError):
            pool.complete(REQUEST)
        assert pool.meter.totals().requests == 0
    assert budget.state().spent_tokens == 0
