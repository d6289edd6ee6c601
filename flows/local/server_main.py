"""The managed local Prefect server process (started by `flows.local.api`, never by hand).

It serves Prefect's own API app and UI, with its services, as `prefect server start` does
(a service records task runs from events), on a socket the CLI bound and handed over, and
exits by itself after `--idle-seconds` without a request or open websocket. `--instance` is
how the CLI recognises the process as its own.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from flows.local.process import LOCK_FILE, forget_state, read_state
from flows.local.startup import startup_gc

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class IdleTracker:
    """An ASGI wrapper that records when the last request or websocket (a run's events) ended,
    and how many are open."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.last = time.monotonic()
        self.open = 0
        self.answered = threading.Event()  # its first request has been answered

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            self.last = time.monotonic()
            self.answered.set()

    def idle_for(self) -> float:
        return 0.0 if self.open else time.monotonic() - self.last


# Read-only calls that do what a fresh server does lazily on the first flow run it is asked to
# create (~0.4-0.5 s here: the flow run and task run schemas and queries built, the database
# sessions opened; later creations take ~30 ms).
WARM_UP = (("/flow_runs/filter", b'{"limit": 1}'), ("/task_runs/filter", b'{"limit": 1}'))


def warm_up(tracker: IdleTracker, url: str) -> int:
    """Once the server has answered its first request (the CLI's health check: the server's
    own start is over), make the `WARM_UP` calls, while the CLI still prepares its review on
    the other core; how many were answered. A call that fails costs only the time it saved."""
    tracker.answered.wait()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    answered = 0
    for path, body in WARM_UP:
        request = urllib.request.Request(
            url + path, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        with contextlib.suppress(OSError), opener.open(request, timeout=30) as response:
            response.read()
            answered += 1
    return answered


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reviewflow-prefect-server")
    parser.add_argument("--fd", type=int, required=True, help="listening socket, already bound")
    parser.add_argument("--idle-seconds", type=float, required=True)
    parser.add_argument("--instance", required=True)
    parser.add_argument("--home", type=Path, required=True, help="the managed Prefect home")
    return parser.parse_args(argv)


def _idle_seconds(args: argparse.Namespace) -> float:
    """The idle time the state file records for this server (the CLI that started it early,
    before reading its config, records the config's once the server answers), else the one it
    was started with."""
    state = read_state(args.home)
    if state is None or state.instance != args.instance:
        return float(args.idle_seconds)
    return state.idle_minutes * 60


def _watch_idle(tracker: IdleTracker, server: Any, args: argparse.Namespace) -> None:
    """Stop the server once idle; the lock is taken first and kept until the process exits,
    so a CLI that holds it (checking health, which counts as a request) never races the exit."""
    step = min(1.0, max(args.idle_seconds / 4, 0.05))
    lock = open(args.home / LOCK_FILE, "a+")  # noqa: SIM115 - held until process exit
    while not server.should_exit:
        time.sleep(step)
        idle = _idle_seconds(args)
        if tracker.idle_for() < idle:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a CLI is looking at us right now
        if tracker.idle_for() < idle:
            fcntl.flock(lock, fcntl.LOCK_UN)
            continue
        with contextlib.suppress(OSError):  # the lock is held; exiting matters more
            forget_state(args.home, args.instance)
        server.should_exit = True


# Prefect's in-memory messaging drops an event when a subscriber's queue holds 10,000 (a bound
# with no setting, Prefect PR 19136; Prefect 3.9.1 has none either: its one supported way around
# it is another broker, `PREFECT_MESSAGING_BROKER`, such as the team server's Redis). On a review
# of thousands of files the task run recorder falls that far behind while the review runs, and
# the task runs whose events were dropped never reach the UI (8,081-11,900 of 12,759 recorded at
# 5,000 files). Its queue is bounded here at a size it never reaches (a 5,000-file review sends
# ~38,000 events), and drains once the review's events slow. The bound is a private attribute of
# Prefect's, so it is replaced for the one Prefect version it was read in, and the server
# refuses to start on any other (tests/server/test_local_server.py pins it).
EVENT_QUEUE_SIZE = 1_000_000
PATCHED_PREFECT = "3.9.1"


class UnsupportedPrefect(RuntimeError):
    """The installed Prefect is not the version whose in-memory messaging was read."""


def deep_event_queues(installed: str | None = None) -> None:
    """Give every in-memory messaging subscription of this process a queue of
    `EVENT_QUEUE_SIZE` (called before the app starts its services); `UnsupportedPrefect` if
    the installed Prefect (or `installed`) is not `PATCHED_PREFECT`."""
    import asyncio

    import prefect

    version = prefect.__version__ if installed is None else installed
    if version != PATCHED_PREFECT:
        raise UnsupportedPrefect(
            f"the managed Prefect server supports Prefect {PATCHED_PREFECT} only, and "
            f"{version} is installed: install prefect=={PATCHED_PREFECT}, or set "
            "PREFECT_API_URL to a server of your own"
        )
    from prefect.server.utilities.messaging import memory

    made = memory.Subscription.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self._queue = asyncio.Queue(maxsize=EVENT_QUEUE_SIZE)

    memory.Subscription.__init__ = init  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    sock = socket.socket(fileno=args.fd)
    with startup_gc():
        import uvicorn
        from prefect.server.api.server import create_app

        try:
            deep_event_queues()
        except UnsupportedPrefect as error:
            print(error, file=sys.stderr, flush=True)  # the CLI shows the log's last line
            os._exit(2)
        tracker = IdleTracker(create_app(final=True))
    config = uvicorn.Config(tracker, log_level="error", lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    threading.Thread(target=_watch_idle, args=(tracker, server, args), daemon=True).start()
    host, port = sock.getsockname()[:2]  # 127.0.0.1, or the address `prefect.server_host` names
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/api"
    threading.Thread(target=warm_up, args=(tracker, url), daemon=True).start()
    server.run(sockets=[sock])
    os._exit(0)  # skip the interpreter's final collection over Prefect's modules


if __name__ == "__main__":
    main()
