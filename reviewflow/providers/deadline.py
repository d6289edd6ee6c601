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
never waits for the model's answers. Each idle client keeps its worker thread: starting a thread
per request cost ~0.5 ms of CPU here, with a review's threads competing for the interpreter lock.
"""

from __future__ import annotations

import contextvars
import queue
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
    call: Callable[[], T],
    seconds: float,
    abandon: Future[None] | None = None,
    worker: Worker | None = None,
) -> Future[T]:
    """The finished future of `call()` run on a daemon thread (`worker`'s, else a new one);
    DeadlineExceeded after `seconds`, or Abandoned as soon as `abandon` is done."""
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

    if worker is None:
        threading.Thread(target=work, name="reviewflow-model-request", daemon=True).start()
    else:
        worker.run(work)
    waited: list[Future[Any]] = [future] if abandon is None else [future, abandon]
    done, _ = wait(waited, timeout=seconds, return_when=FIRST_COMPLETED)
    if future in done:
        return future
    if done:
        raise Abandoned("the call was abandoned: its pool was closed")
    raise DeadlineExceeded(f"no result within {seconds:g}s")


class Worker:
    """A daemon thread that runs the calls it is given, one at a time, until stopped."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="reviewflow-model-request", daemon=True).start()

    def run(self, work: Callable[[], None]) -> None:
        """Queue `work` (which reports its own outcome)."""
        self._calls.put(work)

    def stop(self) -> None:
        """End the thread once the call it runs (if any) returns."""
        self._calls.put(None)

    def _loop(self) -> None:
        while (work := self._calls.get()) is not None:
            work()


class ClientPool(Generic[ClientT]):
    """SDK clients for the requests in flight, each with its worker thread: idle ones are
    reused, abandoned ones closed (and their worker left to end with its call)."""

    def __init__(self, factory: Callable[[], ClientT]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._idle: list[tuple[ClientT, Worker]] = []
        self._closed: Future[None] = Future()  # done once closed: calls in flight are abandoned

    def run(self, call: Callable[[ClientT], T], seconds: float) -> T:
        """`call(client)` with a client of its own, within `seconds` (else DeadlineExceeded),
        or Abandoned once the pool is closed."""
        if self._closed.done():
            raise Abandoned("the pool is closed")
        client, worker = self._checkout()
        try:
            future = run_with_deadline(lambda: call(client), seconds, self._closed, worker)
        except BaseException:  # deadline passed or interrupted: the worker may still use it
            client.close()
            worker.stop()
            raise
        self._checkin(client, worker)
        return future.result()

    def close(self) -> None:
        """Close the idle clients and abandon the calls in flight (their clients are closed)."""
        with self._lock:
            if not self._closed.done():
                self._closed.set_result(None)
            idle, self._idle = self._idle, []
        for client, worker in idle:
            client.close()
            worker.stop()

    def _checkout(self) -> tuple[ClientT, Worker]:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._factory(), Worker()

    def _checkin(self, client: ClientT, worker: Worker) -> None:
        with self._lock:
            if not self._closed.done():
                self._idle.append((client, worker))
                return
        client.close()
        worker.stop()
