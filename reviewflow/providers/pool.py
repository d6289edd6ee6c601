"""A per-review provider pool: bounded requests in flight, a usage meter, a key-free handle."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType

from pydantic import BaseModel, ConfigDict, SecretStr

from reviewflow.config import (
    ENV_PREFIX,
    KEY_FALLBACK_ENV,
    Config,
    ModelSettings,
    Protocol,
    home_dir,
    load_config,
)
from reviewflow.providers.base import ModelRequest, ModelResponse, Provider, Usage
from reviewflow.providers.factory import check_settings, create_provider

ProviderFactory = Callable[[ModelSettings], Provider]


class ProviderHandle(BaseModel):
    """What a task needs to reach a pool: the model settings without the API key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_id: str
    protocol: Protocol
    model: str
    endpoint: str | None
    timeout: float
    concurrency: int


class UsageTotals(Usage):
    """Usage summed over a review, with every request attempt counted."""

    requests: int = 0


class UsageMeter:
    """Thread-safe totals: each attempt counts in `requests`, tokens come from responses."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = Usage()
        self._requests = 0

    def count_request(self) -> None:
        """Count one request attempt, whatever its outcome."""
        with self._lock:
            self._requests += 1

    def add(self, usage: Usage) -> None:
        """Add the usage one response reported."""
        with self._lock:
            self._usage = self._usage + usage

    def totals(self) -> UsageTotals:
        """A snapshot of the totals so far."""
        with self._lock:
            return UsageTotals(**self._usage.model_dump(), requests=self._requests)


_POOLS: dict[str, ProviderPool] = {}
_POOLS_LOCK = threading.Lock()


class ProviderPool:
    """One provider per review: at most `concurrency` requests in flight, usage metered."""

    def __init__(
        self,
        settings: ModelSettings,
        concurrency: int,
        factory: ProviderFactory = create_provider,
        pool_id: str | None = None,
    ) -> None:
        check_settings(settings)
        self.settings = settings
        self.meter = UsageMeter()
        self.id = pool_id or uuid.uuid4().hex
        self._provider = factory(settings)
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self.handle = ProviderHandle(
            pool_id=self.id,
            protocol=settings.protocol,
            model=settings.name,
            endpoint=settings.endpoint,
            timeout=settings.timeout,
            concurrency=max(1, concurrency),
        )
        with _POOLS_LOCK:
            _POOLS.setdefault(self.id, self)

    @classmethod
    def from_config(cls, config: Config) -> ProviderPool:
        """The pool for a review's effective config (`model.*`, `review.concurrency`)."""
        return cls(config.model, config.review.concurrency)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One request attempt through the pool's provider, waiting for a free slot."""
        with self._slots:
            self.meter.count_request()
            response = self._provider.complete(request)
        self.meter.add(response.usage)
        return response

    def close(self) -> None:
        """Forget the pool and release the provider's connections."""
        with _POOLS_LOCK:
            if _POOLS.get(self.id) is self:
                del _POOLS[self.id]
        self._provider.close()

    def __enter__(self) -> ProviderPool:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def pool_for(handle: ProviderHandle, env: Mapping[str, str] | None = None) -> ProviderPool:
    """The live pool behind `handle`; in another process, a new one keyed from its environment."""
    with _POOLS_LOCK:
        pool = _POOLS.get(handle.pool_id)
    if pool is not None:
        return pool
    env = os.environ if env is None else env
    settings = ModelSettings(
        protocol=handle.protocol,
        name=handle.model,
        endpoint=handle.endpoint,
        timeout=handle.timeout,
        api_key=environment_key(handle.protocol, env),
    )
    candidate = ProviderPool(settings, handle.concurrency, pool_id=handle.pool_id)
    with _POOLS_LOCK:
        winner = _POOLS[handle.pool_id]
    if winner is not candidate:  # another thread registered first
        candidate._provider.close()
    return winner


def environment_key(protocol: Protocol, env: Mapping[str, str]) -> SecretStr | None:
    """The API key this process would use for `protocol`: config file, then environment."""
    config = load_config(home_dir(env), env)
    if config.model.protocol is protocol and config.model.api_key is not None:
        return config.model.api_key
    for name in (ENV_PREFIX + "API_KEY", *KEY_FALLBACK_ENV[protocol.value]):
        if env.get(name):
            return SecretStr(env[name])
    return None
