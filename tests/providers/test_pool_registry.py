"""A flow run's provider pools (`PoolRegistry`): a handle resolves inside its run's context only,
the run's end closes every pool (abandoning what is in flight), and on a Dask worker the run's
plugin holds the pools there (`tasks.pools`): a stage finds them by its handle, a cancel stops
them and any made after it, and the run's end (removing the plugin) closes them."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from distributed import Client, LocalCluster

from reviewflow.providers import ModelRequest, ProviderHandle, ProviderPool, UserMessage, pool_for
from reviewflow.providers.failures import RequestAbandonedError
from reviewflow.providers.pool import PoolClosedError, ReviewCancelled
from reviewflow.providers.registry import PoolRegistry
from tasks.pools import plugin_name, pool_of, run_pools_plugin, stop_on_worker
from tests.wire_server import TEST_KEY, Delay, Text, WireServer

REQUEST = ModelRequest(messages=(UserMessage(content="hi"),))


def test_a_handle_resolves_in_its_runs_context_only(wire: WireServer) -> None:
    with PoolRegistry() as run:
        with run.active():
            pool = ProviderPool(wire.settings("openai"), 1)
            assert pool.registry is run and pool.handle.registry == run.id
            assert pool_for(pool.handle) is pool
        with pytest.raises(PoolClosedError, match="out of reach: no flow run's provider pools"):
            pool_for(pool.handle)  # outside the run's block
        with PoolRegistry() as other, other.active(), pytest.raises(PoolClosedError):
            pool_for(pool.handle)  # another run's pools do not hold it
    assert pool.closed  # the run's end closed it


def test_the_runs_end_closes_every_pool_and_abandons_their_requests_in_flight(
    wire: WireServer,
) -> None:
    wire.script("openai", [Delay(30)])
    with ThreadPoolExecutor(max_workers=1) as threads:
        with PoolRegistry() as run:
            pool = ProviderPool(wire.settings("openai"), 1, registry=run)
            verifier = pool_for(pool.for_model("verifier"), run)
            pending = threads.submit(pool.complete, REQUEST)
            while not wire.requests():
                time.sleep(0.01)
        with pytest.raises(RequestAbandonedError):
            pending.result(timeout=5)
    assert pool.closed and verifier.closed and run.get(pool.id) is None


def _stage(handle: ProviderHandle) -> tuple[str, str]:
    """A stage's request on a Dask worker: the registry its pool is in, and the answer."""
    pool = pool_of(handle)
    return pool.registry.id, pool.complete(REQUEST).text


def test_on_a_dask_worker_the_runs_plugin_holds_its_pools_until_the_run_removes_it(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.script("openai", [Text("from a worker")])
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)  # a worker's key is its environment's
    with PoolRegistry() as run:
        pool = ProviderPool(wire.settings("openai", key="sk-review-process"), 1, registry=run)
        seen_elsewhere = pool.handle.model_copy(update={"pid": -1})  # a worker process's view
        with (
            LocalCluster(
                n_workers=1,
                processes=False,  # a worker in this process: `pid` below says another
                protocol="tcp://",
                host="127.0.0.1",
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            ) as cluster,
            Client(cluster) as client,
        ):
            with pytest.raises(PoolClosedError, match="out of reach"):  # no plugin: no pools
                client.submit(_stage, seen_elsewhere, pure=False).result()
            client.register_plugin(run_pools_plugin()(run.id))
            assert client.submit(_stage, seen_elsewhere, pure=False).result() == (
                run.id,
                "from a worker",
            )
            client.run(stop_on_worker, [run.id])  # the run's cancel, told to every worker
            with pytest.raises(ReviewCancelled):
                client.submit(_stage, seen_elsewhere, pure=False).result()
            held = list(client.run(_stopped_there, run.id, pool.id).values())
            client.unregister_worker_plugin(plugin_name(run.id))  # the run's end
            with pytest.raises(PoolClosedError, match="out of reach"):
                client.submit(_stage, seen_elsewhere, pure=False).result()
    assert held == [True]  # the stop closed the worker's pool, and makes none again
    assert [r.credential for r in wire.requests("openai")] == [TEST_KEY]


def _stopped_there(registry_id: str, pool_id: str, dask_worker: Any) -> bool:
    """Whether the run's registry on this worker is cancelled and no longer holds the pool."""
    registry = dask_worker.plugins[plugin_name(registry_id)].registry
    return bool(registry.cancelled and registry.get(pool_id) is None)
