"""The warm review process (started by `flows.warm`, never by hand).

It imports everything a review needs (reviewflow, Prefect, the model SDKs), then accepts CLI
hand-overs on `warm.sock` and forks one child per review. The child takes the CLI's stdin,
stdout, stderr, argv, cwd, umask and environment (the key arrives only there) and runs
`flows.cli.main` as the CLI would have; the parent never reads a hand-over. It exits after
`--idle-seconds` without a hand-over, at once when the managed server it belongs to is gone or
replaced, and on SIGTERM.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import io
import json
import os
import resource
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from flows import warm
from flows.server_process import is_ours, read_state

# What a review imports: the CLI and the flow (Prefect with them); `prepare` adds the rest.
PRELOADED = ("flows.cli", "flows.review")
_POLL_S = 1.0


def _parse(argv: list[str] | None) -> argparse.Namespace:
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


def serve(args: argparse.Namespace) -> None:
    """Accept hand-overs until idle, stale or stopped; fork a child for each."""
    listener = _listen(args.home / warm.SOCKET_FILE)
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
                _child(conn, listener, args.home / warm.LOG_FILE)
            conn.close()
    finally:
        state = warm.read_warm(args.home)
        if state is not None and state.instance == args.instance:
            warm.forget_warm(args.home, state)


def _child(conn: socket.socket, listener: socket.socket, log: Path) -> NoReturn:
    """One review: take over the CLI's process context, run the CLI, report the exit code."""
    for sig in (signal.SIGCHLD, signal.SIGTERM):  # git's exit codes, and a plain SIGTERM
        signal.signal(sig, signal.SIG_DFL)
    listener.close()
    code = 2
    try:
        conn.settimeout(None)
        reader = conn.makefile("rb")
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        header = json.loads(reader.readline())
        conn.sendall(warm.TAKEN)
        _adopt(header, fds)
        threading.Thread(target=_watch, args=(reader,), daemon=True).start()
        code = _run(header["argv"])
    except BaseException:  # noqa: BLE001 - the child must report a code, whatever happened
        with contextlib.suppress(OSError, ValueError):
            traceback.print_exc(file=sys.stderr)
    _record(log, code)
    with contextlib.suppress(OSError):
        conn.sendall(f"{code}\n".encode())
    os._exit(code)


def _record(log: Path, code: int) -> None:
    """One line per review in the warm process's log: its exit code, CPU and peak RSS."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    line = f"review pid {os.getpid()}: exit {code}, CPU {cpu:.2f} s, peak RSS {own.ru_maxrss} KiB\n"
    with contextlib.suppress(OSError):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND)
        with os.fdopen(fd, "w") as handle:
            handle.write(line)


def _adopt(header: dict[str, Any], fds: list[int]) -> None:
    """The CLI's stdio, environment, cwd and umask, as if this process had been started there."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = header["stdio"]
    # As the interpreter makes them: line-buffered on a terminal, encoded as in the CLI.
    sys.stdin = open(0, encoding=in_enc, errors=in_err, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=out_enc, errors=out_err, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=err_enc, errors=err_err, closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(header["environ"])
    os.umask(header["umask"])
    os.chdir(header["cwd"])
    sys.argv = list(header["argv"])
    warm.FORKED = True


def _watch(reader: io.BufferedReader) -> None:
    """The CLI's Ctrl-C and SIGTERM, delivered here; the CLI gone (killed): this review too."""
    for line in reader:
        if line.strip() == b"int":
            os.kill(os.getpid(), signal.SIGINT)
        elif line.strip() == b"term":
            os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGKILL)


def _run(argv: list[str]) -> int:
    """`flows.cli.main`, then what the interpreter's exit would do (Prefect drains its workers)."""
    from flows.cli import main

    try:
        code = main(argv[1:])
    except SystemExit as exc:  # argparse: --help, a bad flag
        code = _exit_code(exc)
    except KeyboardInterrupt:
        code = 130
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    return code


def _exit_code(exc: SystemExit) -> int:
    """As the interpreter would exit, except that a message is exit 2 (1 means a finding)."""
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    sys.stderr.write(f"{exc.code}\n")
    return 2


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    for name in PRELOADED:
        importlib.import_module(name)
    from flows.warm_prep import prepare

    prepare()
    gc.collect()
    gc.freeze()  # the imported modules: never collected again, here or in a child
    with contextlib.suppress(SystemExit):  # SIGTERM
        serve(args)
    os._exit(0)  # skip the interpreter's final collection (and Prefect's exit handlers)


if __name__ == "__main__":
    main()
