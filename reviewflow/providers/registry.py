"""The provider pools of one flow run in one process (`PoolRegistry`), and how the run's code
reaches them.

Lifetime: one registry per flow run and process, opened and closed by the run. In the review's
process, `pool.review_pools` opens it around the flow run and makes it active in the run's
context (`active`: a context variable it sets and resets, as Prefect's own run context is one);
the flow's body and the stages on Prefect's thread runner (which carries the context into each
task's thread) find their pool through it, by the key-free `ProviderHandle` they were given. On
a Dask worker, which has no such context, the run's task runner opens one registry per worker
as a worker plugin and removes it at the run's end (`tasks.pools`). Closing a registry closes
every pool in it. Nothing here outlives its run: no pool, no cancel, no registry.

A cancel reaches the pools through their registry: the signal in the review's process stops each
pool (`mark_stopped`: a set's `add`, safe in a signal handler), and on a Dask worker `stop`
stops every pool of the run there and refuses those asked for later.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from types import TracebackType
from typing import Protocol, TypeVar, cast


class Pool(Protocol):
    """What a registry needs of a pool (`reviewflow.providers.pool.ProviderPool`)."""

    @property
    def id(self) -> str: ...

    @property
    def pid(self) -> int: ...

    def close(self) -> None: ...


P = TypeVar("P", bound=Pool)

_ACTIVE: ContextVar[PoolRegistry | None] = ContextVar("reviewflow_provider_pools", default=None)


class PoolRegistry:
    """The live provider pools of one flow run in this process, by ID, and those cancelled."""

    def __init__(self, registry_id: str | None = None) -> None:
        self.id = registry_id or uuid.uuid4().hex
        self.cancelled = False  # the run was cancelled here: every pool, even one made later
        self._pools: dict[str, Pool] = {}
        self._stopped: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def current() -> PoolRegistry | None:
        """The registry active in this context (its flow run's), if any."""
        return _ACTIVE.get()

    @contextlib.contextmanager
    def active(self) -> Iterator[PoolRegistry]:
        """This registry as the one this context's code (and the threads it hands its context
        to) resolves handles in, until the block ends."""
        mark = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(mark)

    def add(self, pool: P) -> P:
        """Register `pool` unless a live pool of this process has its ID; the one in use."""
        with self._lock:
            current = self._pools.get(pool.id)
            if current is None or current.pid != pool.pid:  # none, or one inherited by a fork
                self._pools[pool.id] = current = pool
            return cast(P, current)  # a registry holds the pools of one class

    def get(self, pool_id: str) -> Pool | None:
        with self._lock:
            return self._pools.get(pool_id)

    def discard(self, pool: Pool) -> None:
        """Forget `pool` (closed), if it is the one registered under its ID."""
        with self._lock:
            if self._pools.get(pool.id) is pool:
                del self._pools[pool.id]

    def stopped(self, pool_id: str) -> bool:
        """Whether the pool `pool_id` was cancelled (it sends nothing, here, ever again)."""
        return self.cancelled or pool_id in self._stopped

    def mark_stopped(self, pool_id: str) -> None:
        """The pool `pool_id` is cancelled (called in a signal handler: no lock, set.add is
        atomic)."""
        self._stopped.add(pool_id)

    def stop(self, pool_ids: Iterable[str] | None = None) -> None:
        """A cancel: the pools `pool_ids` (None: every pool of the run here, and any asked for
        later) send nothing more, their requests in flight are abandoned, none is made again."""
        with self._lock:
            if pool_ids is None:
                self.cancelled = True
                pools = list(self._pools.values())
            else:
                ids = set(pool_ids)
                self._stopped.update(ids)
                pools = [pool for pool in self._pools.values() if pool.id in ids]
        for pool in pools:
            pool.close()

    def close(self) -> None:
        """The run is over here: close every pool (abandoning what is still in flight)."""
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            pool.close()

    def __enter__(self) -> PoolRegistry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
