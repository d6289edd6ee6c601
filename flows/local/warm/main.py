"""The warm review process's main loop (its program is `flows.cli.warm`, started by the CLI).

It imports everything a review needs (reviewflow, Prefect, the model SDKs, the CLI it is given),
then accepts CLI hand-overs on its socket and forks one child per review
(`flows.local.warm.child`); the parent never reads a hand-over. Before each fork it refuses, by
closing the connection (the CLI then runs the review itself): another uid; other threads running
(a fork would copy their locks); code that changed since it started (it then exits: an upgrade
is never served by old code). A failed fork is refused the same way. It logs each child's end
(exit code, or the signal that killed it). It exits after `--idle-seconds` without a hand-over,
at once when the managed server it belongs to is gone or replaced, when a child declined because
the config turns it off, and on SIGTERM. A socket it cannot listen on turns the warm path off
for its install (`off` in its record) instead of a new start on every review.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import NoReturn

from flows.local.process import is_ours, read_state
from flows.local.startup import startup_gc
from flows.local.warm import prep
from flows.local.warm.child import DECLINED_EXIT, STOP_EXIT, CliMain, run_child
from flows.local.warm.manifest import CodeManifest
from flows.local.warm.sockets import peer_pid, peer_uid, private_dir_problem
from flows.local.warm.state import forget_warm, read_warm, write_warm

_POLL_S = 1.0


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reviewflow-warm")
    parser.add_argument("--home", type=Path, required=True, help="the managed Prefect home")
    parser.add_argument("--instance", required=True)
    parser.add_argument("--server-instance", required=True)
    parser.add_argument("--idle-seconds", type=float, required=True)
    parser.add_argument("--install", required=True, help="the install key (its record's name)")
    parser.add_argument("--socket", type=Path, required=True, help="the hand-over socket")
    return parser.parse_args(argv)


def log(text: str) -> None:
    """One line in this process's log (its stderr), unbuffered."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with contextlib.suppress(OSError):
        os.write(2, f"{stamp} {text}\n".encode(errors="replace"))


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(0)


def _server_gone(args: argparse.Namespace) -> bool:
    server = read_state(args.home)
    return server is None or server.instance != args.server_instance or not is_ours(server)


class CannotServe(Exception):
    """The socket cannot be used: its directory is not private, or listening on it failed."""

    def __init__(self, reason: str, *, off: bool) -> None:
        super().__init__(reason)
        self.off = off  # turn the warm path off for this install (a new start fails the same)


def listen(path: Path) -> socket.socket:
    """The hand-over socket, created 0600 in the private directory `path.parent`."""
    problem = private_dir_problem(path.parent)
    if problem is not None:
        raise CannotServe(problem, off=False)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound = path.with_name(f".{path.name}.{os.getpid()}")
    umask = os.umask(0o177)
    try:
        bound.unlink(missing_ok=True)
        listener.bind(str(bound))
        listener.listen(64)
        bound.replace(path)  # the path appears listening: a CLI never finds it refusing
    except OSError as exc:
        listener.close()
        bound.unlink(missing_ok=True)
        raise CannotServe(f"cannot listen on {path} ({exc.strerror})", off=True) from None
    finally:
        os.umask(umask)
    listener.settimeout(_POLL_S)
    return listener


def thread_count() -> int:
    """Threads of this process, native ones included where /proc tells."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def refusal(conn: socket.socket, manifest: CodeManifest) -> tuple[str, bool] | None:
    """Why this hand-over is refused (and whether this process then exits), or None."""
    uid = peer_uid(conn)
    if uid != os.getuid():
        return f"refused a hand-over from uid {uid} (pid {peer_pid(conn)}): not this user", False
    threads = thread_count()
    if threads > 1:
        return f"refused a hand-over: {threads} threads run here; a fork would copy them", False
    changed = manifest.changed()
    if changed is not None:
        return f"refused a hand-over: the code changed since this process started ({changed})", True
    return None


def ended(status: int) -> str:
    """A child's end as the log says it: its exit code, or the signal that killed it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"killed by {name}" + (" (core dumped)" if os.WCOREDUMP(status) else "")
    code = os.waitstatus_to_exitcode(status)
    if code == STOP_EXIT:
        return "declined: the config turns the warm process off"
    if code == DECLINED_EXIT:
        return "declined: the working directory cannot be entered"
    return f"exit {code}"


def reap() -> bool:
    """Collect the children that ended and log each end; True when one asks this process to
    stop (it declined: the config turns the warm process off)."""
    stop = False
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return stop
        if pid == 0:
            return stop
        log(f"review child {pid} ended: {ended(status)}")
        stop = stop or os.waitstatus_to_exitcode(status) == STOP_EXIT


def serve(
    args: argparse.Namespace, cli: CliMain, adopt: Callable[[], None], manifest: CodeManifest
) -> None:
    """Accept hand-overs until idle, stale or stopped; fork a child running `cli` for each."""
    try:
        listener = listen(args.socket)
    except CannotServe as exc:
        log(f"not serving: {exc}")
        _forget(args, off=str(exc) if exc.off else "")
        return
    log(f"serving on {args.socket} (pid {os.getpid()}, {len(sys.modules)} modules)")
    last, owner = time.monotonic(), os.getpid()
    try:
        while not reap():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                if _server_gone(args) or time.monotonic() - last > args.idle_seconds:
                    return
                continue
            last = time.monotonic()
            with conn:  # the parent's copy: closed once the child has it, or to refuse
                refused = refusal(conn, manifest)
                if refused is not None:
                    log(refused[0])
                    if refused[1]:
                        return
                    continue
                _fork(conn, listener, cli, adopt, args)
        log("stopping: a child declined, the config turns the warm process off")
    finally:
        if os.getpid() == owner:  # not in a child that a SIGTERM caught just after its fork
            listener.close()
            _forget(args)


def _fork(
    conn: socket.socket,
    listener: socket.socket,
    cli: CliMain,
    adopt: Callable[[], None],
    args: argparse.Namespace,
) -> None:
    try:
        pid = os.fork()
    except OSError as exc:
        log(f"refused a hand-over: fork failed ({exc.strerror})")
        return
    if pid == 0:
        state = read_warm(args.home, args.install)
        run_child(conn, listener, cli, adopt, state.log if state else "the warm process's log")
    log(f"review child {pid} started")


def _forget(args: argparse.Namespace, off: str = "") -> None:
    """Forget this process's record; or, `off` given, keep it saying why the warm path is off."""
    state = read_warm(args.home, args.install)
    if state is None or state.instance != args.instance:
        return
    if off:
        write_warm(args.home, replace(state, off=off, noted=False))
    else:
        forget_warm(args.home, state)


def main(argv: Sequence[str] | None, cli: CliMain) -> NoReturn:
    """The warm process: `cli` and everything a review imports are imported by now."""
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _stop)
    with startup_gc():  # frozen after it: never collected again, here or in a child
        inputs = prep.prepare()
        manifest = CodeManifest.of_this_process()  # after every import
        gc.collect()  # what the imports left behind: not frozen with them
    with contextlib.suppress(SystemExit):  # SIGTERM
        serve(args, cli, functools.partial(prep.adopt_settings, inputs), manifest)
    os._exit(0)  # skip the interpreter's final collection (and Prefect's exit handlers)
