"""A per-review provider pool: bounded requests in flight, a usage meter, a key-free handle.

Every pool belongs to a `PoolRegistry`, the pools of one flow run in one process, where a
handle is resolved (`pool_for`); `review_pools` opens the review's registry and pool for its flow
run and closes both at its end (see `reviewflow.providers.registry` for who finds it, and how).

The meter (`reviewflow.providers.meter`) is an in-process convenience: it sees the attempts
made through this pool object (and its siblings) only. Tasks that run in other processes (Dask)
resolve the handle to a pool of their own, in their process's registry of the run, so a review
totals its requests from `ModelResponse.attempts` and from the `attempts` of a final
`ProviderFailure`, which `llm_request` sets wherever it runs.

A cancel stops a review's pools: by the signal in the review's process, and on a Dask worker by
its registry's `stop`. A stopped pool sends nothing more and abandons its requests in flight,
and each request it refuses or abandons raises `ReviewCancelled` (not a failed request: its
stage is cancelled).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
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
from reviewflow.providers.factory import (
    check_settings,
    create_provider,
    key_on_workers,
    key_required,
    missing_key,
)
from reviewflow.providers.messages import ModelRequest, ModelResponse, Usage
from reviewflow.providers.meter import ReviewObserver, UsageMeter
from reviewflow.providers.meter import UsageTotals as UsageTotals  # (where the report reads it)
from reviewflow.providers.registry import PoolRegistry

ProviderFactory = Callable[[ModelSettings], Provider]


class ProviderHandle(BaseModel):
    """What a task needs to reach a pool: the model settings without the API key.

    `pid` is the process that made the pool: there, an unknown pool is a closed one.
    `registry`: the ID of its flow run's `PoolRegistry` (a Dask worker's is found by it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_id: str
    pid: int
    registry: str
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


class PoolClosedError(PermanentProviderError):
    """A handle was used after its pool was closed, in the process that made the pool.

    Not a `ProviderFailure`: no request was sent, so it carries no attempts to count.
    """


class ReviewCancelled(ReviewError):
    """The review was cancelled: its pool sends no request again, and one in flight was
    abandoned. Not a `ProviderError`: no stage takes it for a failed request and goes on (the
    stage that meets it ends Cancelled, see `tasks.llm.cancellable`)."""


class ProviderPool:
    """One provider per review: at most `concurrency` requests in flight, usage metered.

    `registry`: the flow run's pools it joins, where its handle resolves to it (by default the
    registry active in this context, else one of its own: a pool no handle reaches)."""

    def __init__(
        self,
        settings: ModelSettings,
        concurrency: int,
        factory: ProviderFactory = create_provider,
        pool_id: str | None = None,
        observer: ReviewObserver | None = None,
        budget: Budget | None = None,
        registry: PoolRegistry | None = None,
        *,
        key_elsewhere: bool = False,
    ) -> None:
        check_settings(settings, key_elsewhere=key_elsewhere)
        self.registry = registry or PoolRegistry.current() or PoolRegistry()
        self.observer = observer
        self.budget = budget  # the review's, checked before each request (in this process)
        self.settings = settings
        self.meter = UsageMeter()
        self.id = pool_id or uuid.uuid4().hex
        self.pid = os.getpid()
        self.closed = False
        self._released = False
        self._factory = factory
        self._key_elsewhere = key_elsewhere and settings.api_key is None and key_required(settings)
        # no key here: the requests are the workers' (an attempt here is refused in one line)
        self._provider = None if self._key_elsewhere else factory(settings)
        self._slots = threading.BoundedSemaphore(max(1, concurrency))
        self._siblings: dict[str, ProviderPool] = {}  # other models, see `for_model`
        self._lock = threading.Lock()
        self.handle = ProviderHandle(
            pool_id=self.id,
            pid=self.pid,
            registry=self.registry.id,
            protocol=settings.protocol,
            model=settings.name,
            endpoint=settings.endpoint,
            timeout=settings.timeout,
            concurrency=max(1, concurrency),
            **settings.model_dump(include=set(_PLATFORM_FIELDS)),
        )
        self._registered = self.registry.add(self)
        self._cancel_key = cancel.listen(self._stop_sending)  # a cancel: not one request more

    @classmethod
    def from_config(
        cls,
        config: Config,
        observer: ReviewObserver | None = None,
        budget: Budget | None = None,
        registry: PoolRegistry | None = None,
    ) -> ProviderPool:
        """The pool for a review's effective config (`model.*`, `review.concurrency`), with
        the review's budget if it has one."""
        review = config.review
        return cls(
            config.model,
            review.concurrency,
            observer=observer,
            budget=budget,
            registry=registry,
            key_elsewhere=key_on_workers(config),
        )

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One request attempt through the pool's provider, waiting for a free slot.

        Metered: the attempt, and the usage of its answer even when the answer is rejected.
        With a budget, a request that would cross it is not sent (`BudgetExceeded`).
        """
        if self.closed or self.registry.stopped(self.id):
            raise self._refusal()
        with self._slots:
            if self.closed or self.registry.stopped(self.id):  # cancelled (or closed) meanwhile
                raise self._refusal()
            budget = self.budget
            held = budget.reserve(request, self.settings.name) if budget is not None else None
            self.meter.count_request()
            usage: Usage | None = None
            sent = True
            try:
                response = self._made().complete(request)
                usage = response.usage
            except ProviderError as exc:
                usage = failures.usage_of(exc)
                sent = not failures.never_reached(exc)
                if not sent:  # it could not be built: no attempt, nothing spent
                    self.meter.count_request(-1)
                self._count(usage or Usage())
                if self.registry.stopped(self.id):  # abandoned by the cancel: ends Cancelled
                    raise _cancelled_error(self.id) from exc
                raise
            finally:
                if self.budget is not None and held is not None:
                    self.budget.settle(held, usage, sent)
        self._count(response.usage)
        return response

    def _made(self) -> Provider:
        """The provider requests go through; a pool whose key is on the workers has none."""
        if self._provider is None:
            raise missing_key(self.settings)
        return self._provider

    def for_model(self, name: str) -> ProviderHandle:
        """The handle of a pool for model `name` (same protocol, endpoint and key: the
        verifier's), sharing this pool's request slots, meter, observer and budget, so
        `review.concurrency`, the review's usage and its budget cover both; closed with it."""
        if name == self.settings.name:
            return self.handle
        update: dict[str, object] = {"name": name, "price": None}  # model.price: model.name's
        if self.settings.platform == Platform.AZURE:
            update["deployment"] = None  # the verifier's deployment is named by its model
        return self._sibling(name, lambda: self.settings.model_copy(update=update))

    def for_settings(
        self, model: ModelSettings, env: Mapping[str, str] | None = None
    ) -> ProviderHandle:
        """The handle of a pool for another model (a pass's, `review.pass_models`), sharing
        this pool's slots, meter, observer and budget as `for_model`'s does (the budget charges
        each request at the price of the model that sends it, by name); closed with it.
        Its key: this pool's for the same protocol and platform (a CLI run has removed their
        key variables from its environment by now), else from the protocol's key variables in
        `env` (the process's)."""
        name = "\0".join(str(v) for v in model.model_dump(exclude={"api_key", "price"}).values())
        mine = (self.settings.protocol, self.settings.platform)

        def settings() -> ModelSettings:
            environ = os.environ if env is None else env
            key = (
                self.settings.api_key
                if (model.protocol, model.platform) == mine
                else environment_key(model.protocol, environ, model.platform)
            )
            return ModelSettings(**{**model.model_dump(exclude={"api_key"}), "api_key": key})

        return self._sibling(name, settings)

    def _sibling(self, name: str, settings: Callable[[], ModelSettings]) -> ProviderHandle:
        with self._lock:
            sibling = self._siblings.get(name)
        if sibling is None:
            sibling = ProviderPool(
                settings(),
                self.handle.concurrency,
                self._factory,
                registry=self.registry,
                key_elsewhere=self._key_elsewhere,
            )
            sibling.observer, sibling.meter, sibling._slots = self.observer, self.meter, self._slots
            sibling.budget = self.budget
            with self._lock:
                self._siblings[name] = sibling
        return sibling.handle

    def _refusal(self) -> PoolClosedError | ReviewCancelled:
        """Why this pool sends nothing: its review was cancelled, or it was closed."""
        stopped = self.registry.stopped(self.id)
        return _cancelled_error(self.id) if stopped else _closed_error(self.id)

    def _count(self, usage: Usage) -> None:
        self.meter.add(usage)
        if self.observer is not None:
            self.observer.request_done(usage, self.settings.name)

    def _stop_sending(self) -> None:
        """A cancel (in the signal handler): no request is sent from now on; those in flight
        are abandoned when the review closes the pool."""
        self.registry.mark_stopped(self.id)  # (no lock in a signal handler: set.add is atomic)
        self.closed = True

    def close(self) -> None:
        """Forget the pool and release the provider's connections (abandoning the requests
        in flight)."""
        self.closed = True
        cancel.unlisten(self._cancel_key)
        with self._lock:
            released, self._released = self._released, True
        if released:  # closed already (with its registry, or a sibling with its pool)
            return
        for sibling in list(self._siblings.values()):
            sibling.close()
        self.registry.discard(self)
        if self._provider is not None:
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


def pool_for(
    handle: ProviderHandle,
    registry: PoolRegistry | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderPool:
    """The live pool behind `handle` in `registry` (by default the one active in this context:
    its flow run's); in another process than the pool's, a new one keyed from its environment,
    kept in `registry` for the run's later stages there.

    In the process that made the pool, a pool that is gone was closed: that is an error, not
    a reason to start a second pool (and meter) behind the review's back.
    """
    registry = registry or PoolRegistry.current()
    if registry is None:
        raise PoolClosedError(
            f"provider pool {handle.pool_id} is out of reach: no flow run's provider pools are "
            "open in this context (resolve a handle inside its run)"
        )
    pool = registry.get(handle.pool_id)
    if isinstance(pool, ProviderPool) and pool.pid == os.getpid():
        return pool  # (its review cancelled, it refuses every request: see `complete`)
    if registry.stopped(handle.pool_id):
        raise _cancelled_error(handle.pool_id)
    if handle.pid == os.getpid():
        raise _closed_error(handle.pool_id)
    env = os.environ if env is None else env
    settings = handle.settings(environment_key(handle.protocol, env, handle.platform))
    candidate = ProviderPool(
        settings, handle.concurrency, pool_id=handle.pool_id, registry=registry
    )
    if candidate._registered is not candidate:  # another thread registered first
        candidate.close()
    return candidate._registered


@contextlib.contextmanager
def review_pools(
    config: Config, observer: ReviewObserver | None = None, budget: Budget | None = None
) -> Iterator[ProviderPool]:
    """The review's pool for one flow run in this process, in a registry of its own that is
    active in this context until the block ends; every pool of the run is closed then."""
    with (
        PoolRegistry() as registry,
        registry.active(),
        ProviderPool.from_config(config, observer, budget, registry) as pool,
    ):
        yield pool


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
