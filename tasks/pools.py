"""Where a model stage finds its provider pool, and the Dask side of a flow run's pools.

In the review's process, a stage's thread carries its flow run's context, in which the run's
`PoolRegistry` is active (Prefect's thread runner copies the context into each task's thread).
A Dask worker runs the stage without that context: there, the flow run's task runner has
registered one worker plugin per run (`run_pools_plugin`), which holds the run's registry on
each worker from its registration to its removal at the run's end, and a stage finds it by the
registry ID its handle carries (`pool_of`). A cancel stops it there (`stop_on_worker`).

Light to import (the pools themselves are imported on first use): a worker unpickles the plugin,
and imports this module, in its event loop.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from reviewflow.providers.registry import PoolRegistry

if TYPE_CHECKING:
    from reviewflow.providers.pool import ProviderHandle, ProviderPool


def plugin_name(registry_id: str) -> str:
    """The name of the worker plugin that holds the run `registry_id`'s pools on a worker."""
    return f"reviewflow-pools-{registry_id}"


def pool_of(handle: ProviderHandle) -> ProviderPool:
    """The pool a stage sends `handle`'s requests through: in its run's registry, the one
    active in this context, else (on a Dask worker) the one the run registered there."""
    from reviewflow.providers.pool import pool_for

    return pool_for(handle, PoolRegistry.current() or _worker_registry(handle.registry))


def _worker_registry(registry_id: str) -> PoolRegistry | None:
    """The run's registry on the Dask worker this runs on (None: not on a worker)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not a Dask worker's task
        return None
    plugin = worker.plugins.get(plugin_name(registry_id))
    registry = getattr(plugin, "registry", None)
    return registry if isinstance(registry, PoolRegistry) else None


@cache
def run_pools_plugin() -> type[Any]:
    """`RunPools`, defined on first use: Dask is imported only by a review that runs on it."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class RunPools(WorkerPlugin):
        """One flow run's provider pools on one Dask worker: a registry opened when the run
        registers this plugin, closed (every pool, its requests in flight abandoned) when the
        run removes it."""

        def __init__(self, registry_id: str) -> None:
            self.registry_id = registry_id
            self.name = plugin_name(registry_id)
            self.registry: PoolRegistry | None = None  # made on the worker, never pickled

        def setup(self, worker: Any) -> None:
            self.registry = PoolRegistry(self.registry_id)

        def teardown(self, worker: Any) -> None:
            if self.registry is not None:
                self.registry.close()

    return RunPools


def stop_on_worker(registry_ids: list[str], dask_worker: Any) -> None:
    """On a Dask worker (`Client.run`), after a cancel: every pool of these runs there stops
    sending, its requests in flight abandoned, and none is made again."""
    for registry_id in registry_ids:
        registry = getattr(dask_worker.plugins.get(plugin_name(registry_id)), "registry", None)
        if isinstance(registry, PoolRegistry):
            registry.stop()
