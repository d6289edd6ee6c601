"""The total request deadline and the per-request SDK clients, without any server."""

from __future__ import annotations

import threading
import time

import pytest

from reviewflow.providers.deadline import (
    Abandoned,
    ClientPool,
    DeadlineExceeded,
    run_with_deadline,
)


class FakeClient:
    """Stands for an SDK client: only `close` matters."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_call_within_the_deadline_gives_its_result_or_its_own_error() -> None:
    assert run_with_deadline(lambda: 42, 1.0).result() == 42

    def fails() -> None:
        raise TimeoutError("the call's own timeout, not the deadline")

    with pytest.raises(TimeoutError, match="own timeout"):
        run_with_deadline(fails, 1.0).result()


def test_a_slow_call_is_abandoned_at_the_deadline() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        run_with_deadline(lambda: release.wait(5), 0.2)
    assert time.monotonic() - started < 1.0
    release.set()


def test_idle_clients_are_reused_and_concurrent_requests_get_their_own() -> None:
    made: list[FakeClient] = []

    def factory() -> FakeClient:
        made.append(FakeClient())
        return made[-1]

    clients = ClientPool(factory)
    first = clients.run(lambda client: client, 1.0)
    assert clients.run(lambda client: client, 1.0) is first
    both = threading.Barrier(2)

    def together(client: FakeClient) -> FakeClient:
        both.wait(timeout=2)
        return client

    threads = [threading.Thread(target=clients.run, args=(together, 2.0)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 2 and not any(client.closed for client in made)
    clients.close()
    assert all(client.closed for client in made)


def test_an_abandoned_client_is_closed_and_never_reused() -> None:
    clients = ClientPool(FakeClient)
    release = threading.Event()
    abandoned: list[FakeClient] = []

    def hangs(client: FakeClient) -> None:
        abandoned.append(client)
        release.wait(5)

    with pytest.raises(DeadlineExceeded):
        clients.run(hangs, 0.2)
    assert abandoned[0].closed
    assert clients.run(lambda client: client, 1.0) is not abandoned[0]
    release.set()


def test_closing_the_pool_abandons_the_calls_in_flight_at_once() -> None:
    clients = ClientPool(FakeClient)
    release = threading.Event()
    used: list[FakeClient] = []

    def hangs(client: FakeClient) -> None:
        used.append(client)
        release.wait(5)

    closing = threading.Timer(0.2, clients.close)
    closing.start()
    started = time.monotonic()
    with pytest.raises(Abandoned):
        clients.run(hangs, 30.0)  # Ctrl-C: the review does not wait for the model's answer
    assert time.monotonic() - started < 2.0
    assert used[0].closed
    with pytest.raises(Abandoned):
        clients.run(lambda client: client, 1.0)  # a closed pool sends nothing more
    assert len(used) == 1
    release.set()


def test_an_idle_client_keeps_its_worker_thread_and_an_abandoned_one_ends() -> None:
    clients = ClientPool(FakeClient)
    threads = {clients.run(lambda client: threading.current_thread(), 1.0) for _ in range(3)}
    assert len(threads) == 1 and threading.current_thread() not in threads
    (reused,) = threads
    release = threading.Event()
    with pytest.raises(DeadlineExceeded):
        clients.run(lambda client: release.wait(5), 0.2)
    assert reused.is_alive()
    release.set()
    reused.join(timeout=2)
    assert not reused.is_alive()  # its call returned: its thread ended, never reused
    assert clients.run(lambda client: threading.current_thread(), 1.0) is not reused
    clients.close()
