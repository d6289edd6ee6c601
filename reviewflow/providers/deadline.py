"""A total deadline per model request, whatever the SDK's per-phase (connect/read/write) timeouts.

httpx applies `timeout` to each socket operation, so a server that trickles bytes keeps a request
alive far past it. The call therefore runs on a daemon worker thread that the caller waits for at
most `seconds`. On expiry the caller gets `DeadlineExceeded` at once and the SDK client the worker
holds is closed and never reused: the worker's next socket operation fails, and a blocked one
still ends within the SDK's own per-phase timeout, so an abandoned worker never outlives
`deadline + timeout`. Each request in flight has its own client, so closing one never disturbs
another request. (Until it ends, an abandoned worker may still hold a connection to the server
while the pool's slot is already free for the next request.) Closing the pool (Ctrl-C) abandons
every call in flight the same way: its caller gets `Abandoned` at once, so a cancelled review
never waits for the model's answers.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")


class SupportsClose(Protocol):
    def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=SupportsClose)


class DeadlineExceeded(Exception):
    """The call did not finish within its deadline (its worker was abandoned)."""


class Abandoned(Exception):
    """The call's pool was closed while it was in flight (its worker was abandoned)."""


def run_with_deadline(
    call: Callable[[], T], seconds: float, abandon: Future[None] | None = None
) -> Future[T]:
    """The finished future of `call()` run on a daemon thread; DeadlineExceeded after
    `seconds`, or Abandoned as soon as `abandon` is done."""
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def work() -> None:
        future.set_running_or_notify_cancel()
        try:
            result = context.run(call)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, who re-raises
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=work, name="reviewflow-model-request", daemon=True).start()
    waited: list[Future[Any]] = [future] if abandon is None else [future, abandon]
    done, _ = wait(waited, timeout=seconds, return_when=FIRST_COMPLETED)
    if future in done:
        return future
    if done:
        raise Abandoned("the call was abandoned: its pool was closed")
    raise DeadlineExceeded(f"no result within {seconds:g}s")


class ClientPool(Generic[ClientT]):
    """SDK clients for the requests in flight: idle ones are reused, abandoned ones closed."""

    def __init__(self, factory: Callable[[], ClientT]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._idle: list[ClientT] = []
        self._closed: Future[None] = Future()  # done once closed: calls in flight are abandoned

    def run(self, call: Callable[[ClientT], T], seconds: float) -> T:
        """`call(client)` with a client of its own, within `seconds` (else DeadlineExceeded),
        or Abandoned once the pool is closed."""
        if self._closed.done():
            raise Abandoned("the pool is closed")
        client = self._checkout()
        try:
            future = run_with_deadline(lambda: call(client), seconds, self._closed)
        except BaseException:  # deadline passed or interrupted: the worker may still use it
            client.close()
            raise
        self._checkin(client)
        return future.result()

    def close(self) -> None:
        """Close the idle clients and abandon the calls in flight (their clients are closed)."""
        with self._lock:
            if not self._closed.done():
                self._closed.set_result(None)
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    def _checkout(self) -> ClientT:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._factory()

    def _checkin(self, client: ClientT) -> None:
        with self._lock:
            if not self._closed.done():
                self._idle.append(client)
                return
        client.close()
