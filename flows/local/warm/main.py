"""The warm review process's main loop (its program is `flows.cli.warm`, started by the CLI).

It imports everything a review needs (reviewflow, Prefect, the model SDKs, the CLI it is given),
then accepts CLI hand-overs on `warm.sock` and forks one child per review
(`flows.local.warm.child`); the parent never reads a hand-over. It exits after
`--idle-seconds` without a hand-over, at once when the managed server it belongs to is gone or
replaced, and on SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import NoReturn

from flows.local.process import is_ours, read_state
from flows.local.warm import prep
from flows.local.warm.child import CliMain, ForkedReview, run_child
from flows.local.warm.state import LOG_FILE, SOCKET_FILE, forget_warm, read_warm

_POLL_S = 1.0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reviewflow-warm")
    parser.add_argument("--home", type=Path, required=True, help="the managed Prefect home")
    parser.add_argument("--instance", required=True)
    parser.add_argument("--server-instance", required=True)
    parser.add_argument("--idle-seconds", type=float, required=True)
    return parser.parse_args(argv)


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(0)


def _server_gone(args: argparse.Namespace) -> bool:
    server = read_state(args.home)
    return server is None or server.instance != args.server_instance or not is_ours(server)


def _listen(path: Path) -> socket.socket:
    """The hand-over socket, created 0600 (the home itself is 0700)."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(umask)
    listener.listen(64)
    listener.settimeout(_POLL_S)
    return listener


def serve(args: argparse.Namespace, cli: CliMain, forked: ForkedReview) -> None:
    """Accept hand-overs until idle, stale or stopped; fork a child running `cli` for each."""
    listener = _listen(args.home / SOCKET_FILE)
    last = time.monotonic()
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if _server_gone(args) or time.monotonic() - last > args.idle_seconds:
                    return
                continue
            last = time.monotonic()
            assert threading.active_count() == 1, "fork with other threads running"
            if os.fork() == 0:
                run_child(conn, listener, args.home / LOG_FILE, cli, forked)
            conn.close()
    finally:
        state = read_warm(args.home)
        if state is not None and state.instance == args.instance:
            forget_warm(args.home, state)


def main(argv: Sequence[str] | None, cli: CliMain) -> NoReturn:
    """The warm process: `cli` and everything a review imports are imported by now."""
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    inputs = prep.prepare()
    forked = ForkedReview(adopt_settings=functools.partial(prep.adopt_settings, inputs))
    gc.collect()
    gc.freeze()  # the imported modules: never collected again, here or in a child
    with contextlib.suppress(SystemExit):  # SIGTERM
        serve(args, cli, forked)
    os._exit(0)  # skip the interpreter's final collection (and Prefect's exit handlers)
