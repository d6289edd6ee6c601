"""A per-review provider pool: bounded requests in flight, a usage meter, a key-free handle.

The meter is an in-process convenience: it sees the attempts made through this pool object
only. Tasks that run in other processes (Dask, process pools) resolve the handle to a pool of
their own, so a review totals its requests from `ModelResponse.attempts` and from the
`attempts` of a final `ProviderFailure`, which `llm_request` sets wherever it runs.

A cancel stops a review's pools: by the signal in the review's process, and on a Dask worker by
`stop`. A stopped pool sends nothing more and abandons its requests in flight, and each request
it refuses or abandons raises `ReviewCancelled` (not a failed request: its stage is cancelled).
"""

from __future__ import annotations

import os
import threading
import typing
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType

from pydantic import BaseModel, ConfigDict, SecretStr

from reviewflow import cancel
from reviewflow.config import (
    Config,
    ModelSettings,
    Platform,
    home_dir,
    load_config,
)
from reviewflow.errors import PermanentProviderError, ProviderError, ReviewError
from reviewflow.providers import failures
from reviewflow.providers.base import Provider
from reviewflow.providers.budget import Budget
from reviewflow.providers.factory import check_settings, create_provider
from reviewflow.providers.messages import ModelRequest, ModelResponse, Usage

ProviderFactory = Callable[[ModelSettings], Provider]


class ReviewObserver(typing.Protocol):
    """Told of a review's progress in the pool's process (the live progress display). The pool
    carries it because the flow's parameters go to the Prefect API: it cannot be one."""

    def request_done(self, usage: Usage) -> None:
        """An attempt this pool made, with the usage its answer reported."""

    def file_started(self, path: str) -> None:
        """A request for the file `path` is going out (told at each: the first one counts)."""

    def file_done(self, path: str) -> None:
        """Every model stage of the file `path` finished."""


class ProviderHandle(BaseModel):
    """What a task needs to reach a pool: the model settings without the API key.

    `pid` is the process that made the pool: there, an unknown pool is a closed one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_id: str
    pid: int
    protocol: str
    model: str
    endpoint: str | None
    timeout: float
    concurrency: int
    platform: str = Platform.DIRECT.value
    region: str | None = None
    project: str | None = None
    deployment: str | None = None
    api_version: str | None = None

    def cache_identity(self) -> dict[str, str | None]:
        """The model an answer came from (never the pool, the key, the timeout or concurrency;
        on a cloud platform, the platform and Azure's deployment too)."""
        identity = {"protocol": self.protocol, "model": self.model, "endpoint": self.endpoint}
        if self.platform != Platform.DIRECT:
            identity.update(platform=self.platform, deployment=self.deployment)
        return identity

    def settings(self, api_key: SecretStr | None) -> ModelSettings:
        """The model settings this handle was made from, with `api_key`."""
        platform = self.model_dump(include=set(_PLATFORM_FIELDS))
        return ModelSettings(
            protocol=self.protocol,
            name=self.model,
            endpoint=self.endpoint,
            timeout=self.timeout,
            api_key=api_key,
            **platform,
        )


_PLATFORM_FIELDS = ("platform", "region", "project", "deployment", "api_version")


class UsageTotals(Usage):
    """Usage summed over a review, with every request attempt counted."""

    requests: int = 0


class PoolClosedError(PermanentProviderError):
    """A handle was used after its pool was closed, in the process that made the pool.

    Not a `ProviderFailure`: no request was sent, so it carries no attempts to count.
    """


class ReviewCancelled(ReviewError):
    """The review was cancelled: its pool sends no request again, and one in flight was
    abandoned. Not a `ProviderError`: no stage takes it for a failed request and goes on (the
    stage that meets it ends Cancelled, see `tasks.llm.cancellable`)."""


class UsageMeter:
    """Thread-safe totals of one pool in one process: every attempt it made counts in
    `requests`; tokens come from answers, rejected ones included (see `failures.usage_of`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._usage = Usage()
        self._requests = 0

    def count_request(self, attempts: int = 1) -> None:
        """Count one request attempt, whatever its outcome (-1: one counted never left)."""
        with self._lock:
            self._requests += attempts

    def add(self, usage: Usage) -> None:
        """Add the usage one answer reported."""
        with self._lock:
            self._usage = self._usage + usage

    def totals(self) -> UsageTotals:
        """A snapshot of the totals so far."""
        with self._lock:
            return UsageTotals(**self._usage.model_dump(), requests=self._requests)


_POOLS: dict[str, ProviderPool] = {}
_POOLS_LOCK = threading.Lock()
_STOPPED: set[str] = set()  # pools of a cancelled review (`stop`, or the signal in this process)


class ProviderPool:
    """One provider per review: at most `concurrency` requests in flight, usage metered."""

    def __init__(
        self,
        settings: ModelSettings,
        concurrency: int,
        factory: ProviderFactory = create_provider,
        pool_id: str | None = None,
        observer: ReviewObserver | None = None,
        budget: Budget | None = None,
    ) -> None:
        check_settings(settings)
        self.observer = observer
        self.budget = budget  # the review's, checked before each request (in this process)
        self.settings = settings
        self.meter = UsageMeter()
        self.id = pool_id or uuid.uuid4().hex
        self.pid = os.getpid()
        self.closed = False
        self._factory = factory
        self._provider = factory(settings)
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._siblings: dict[str, ProviderPool] = {}  # other models, see `for_model`
        self.handle = ProviderHandle(
            pool_id=self.id,
            pid=self.pid,
            protocol=settings.protocol,
            model=settings.name,
            endpoint=settings.endpoint,
            timeout=settings.timeout,
            concurrency=max(1, concurrency),
            **settings.model_dump(include=set(_PLATFORM_FIELDS)),
        )
        self._registered = _register(self)
        self._cancel_key = cancel.listen(self._stop_sending)  # a cancel: not one request more

    @classmethod
    def from_config(
        cls, config: Config, observer: ReviewObserver | None = None, budget: Budget | None = None
    ) -> ProviderPool:
        """The pool for a review's effective config (`model.*`, `review.concurrency`), with
        the review's budget if it has one."""
        return cls(config.model, config.review.concurrency, observer=observer, budget=budget)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One request attempt through the pool's provider, waiting for a free slot.

        Metered: the attempt, and the usage of its answer even when the answer is rejected.
        With a budget, a request that would cross it is not sent (`BudgetExceeded`).
        """
        if self.closed or self.id in _STOPPED:
            raise _refusal(self.id)
        with self._slots:
            if self.closed or self.id in _STOPPED:  # cancelled (or closed) while it waited
                raise _refusal(self.id)
            held = self.budget.reserve(request) if self.budget is not None else None
            self.meter.count_request()
            usage: Usage | None = None
            sent = True
            try:
                response = self._provider.complete(request)
                usage = response.usage
            except ProviderError as exc:
                usage = failures.usage_of(exc)
                sent = not failures.never_reached(exc)
                if not sent:  # it could not be built: no attempt, nothing spent
                    self.meter.count_request(-1)
                self._count(usage or Usage())
                if self.id in _STOPPED:  # abandoned by the cancel: the stage ends Cancelled
                    raise _cancelled_error(self.id) from exc
                raise
            finally:
                if self.budget is not None and held is not None:
                    self.budget.settle(held, usage, sent)
        self._count(response.usage)
        return response

    def for_model(self, name: str) -> ProviderHandle:
        """The handle of a pool for model `name` (same protocol, endpoint and key: the
        verifier's), sharing this pool's request slots, meter, observer and budget, so
        `review.concurrency`, the review's usage and its budget cover both; closed with it."""
        if name == self.settings.name:
            return self.handle
        with _POOLS_LOCK:
            sibling = self._siblings.get(name)
        if sibling is None:
            update: dict[str, object] = {"name": name}
            if self.settings.platform == Platform.AZURE:
                update["deployment"] = None  # the verifier's deployment is named by its model
            settings = self.settings.model_copy(update=update)
            sibling = ProviderPool(settings, self.handle.concurrency, self._factory)
            sibling.observer, sibling.meter, sibling._slots = self.observer, self.meter, self._slots
            sibling.budget = self.budget
            with _POOLS_LOCK:
                self._siblings[name] = sibling
        return sibling.handle

    def _count(self, usage: Usage) -> None:
        self.meter.add(usage)
        if self.observer is not None:
            self.observer.request_done(usage)

    def _stop_sending(self) -> None:
        """A cancel (in the signal handler): no request is sent from now on; those in flight
        are abandoned when the review closes the pool."""
        _STOPPED.add(self.id)  # (no lock in a signal handler: set.add is atomic)
        self.closed = True

    def close(self) -> None:
        """Forget the pool and release the provider's connections (abandoning the requests
        in flight)."""
        self.closed = True
        cancel.unlisten(self._cancel_key)
        for sibling in list(self._siblings.values()):
            sibling.close()
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
    """The live pool behind `handle`; in another process, a new one keyed from its environment.

    In the process that made the pool, a pool that is gone was closed: that is an error, not
    a reason to start a second pool (and meter) behind the review's back.
    """
    with _POOLS_LOCK:
        pool = _POOLS.get(handle.pool_id)
        stopped = handle.pool_id in _STOPPED
    if pool is not None and pool.pid == os.getpid():
        return pool  # (its review cancelled, it refuses every request: see `complete`)
    if stopped:
        raise _cancelled_error(handle.pool_id)
    if handle.pid == os.getpid():
        raise _closed_error(handle.pool_id)
    env = os.environ if env is None else env
    settings = handle.settings(environment_key(handle.protocol, env, handle.platform))
    candidate = ProviderPool(settings, handle.concurrency, pool_id=handle.pool_id)
    if candidate._registered is not candidate:  # another thread registered first
        candidate.close()
    return candidate._registered


def stop(pool_ids: list[str]) -> None:
    """A review in another process was cancelled (a Dask worker is told so): its pools here
    send nothing more, their requests in flight are abandoned, and none is made again."""
    with _POOLS_LOCK:
        _STOPPED.update(pool_ids)
        pools = [_POOLS[pool_id] for pool_id in pool_ids if pool_id in _POOLS]
    for pool in pools:
        pool.close()


def _register(pool: ProviderPool) -> ProviderPool:
    """Register `pool` unless a live pool of this process has its id; return the one in use."""
    with _POOLS_LOCK:
        current = _POOLS.get(pool.id)
        if current is None or current.pid != pool.pid:  # none, or one inherited by a fork
            _POOLS[pool.id] = current = pool
        return current


def _refusal(pool_id: str) -> PoolClosedError | ReviewCancelled:
    """Why pool `pool_id` sends nothing: its review was cancelled, or it was closed."""
    return _cancelled_error(pool_id) if pool_id in _STOPPED else _closed_error(pool_id)


def _cancelled_error(pool_id: str) -> ReviewCancelled:
    return ReviewCancelled("the review was cancelled: no model request is sent after it")


def _closed_error(pool_id: str) -> PoolClosedError:
    return PoolClosedError(
        f"provider pool {pool_id} is closed: its requests can no longer be sent or counted "
        "(use the handle only while the pool is open)"
    )


def environment_key(
    protocol: str, env: Mapping[str, str], platform: str = Platform.DIRECT.value
) -> SecretStr | None:
    """The API key this process would use for `protocol` on `platform` (the CLI's rules)."""
    model = {"protocol": protocol, "platform": platform}
    return load_config(home_dir(env), env, {"model": model}).model.api_key
