"""One review in a child forked by the warm process: the CLI's process context, then the CLI.

The child takes the CLI's stdin, stdout, stderr, argv, cwd, umask and environment (the key
arrives only there) and runs the review as the CLI would have, then reports its exit code.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import resource
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from flows.local.warm.client import TAKEN


@dataclass(frozen=True)
class ForkedReview:
    """What a review run in a warm process's child is told: Prefect was imported before its
    environment was adopted, so `adopt_settings` reads Prefect's settings again if they differ.
    A forked review never hands over, nor starts a warm process."""

    adopt_settings: Callable[[], None]


CliMain = Callable[[Sequence[str], ForkedReview], int]
"""The CLI to run in a child: its arguments (without the program name) and the fork context."""


def run_child(
    conn: socket.socket, listener: socket.socket, log: Path, cli: CliMain, forked: ForkedReview
) -> NoReturn:
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
        conn.sendall(TAKEN)
        _adopt(header, fds)
        threading.Thread(target=_watch, args=(reader,), daemon=True).start()
        code = _run(cli, header["argv"], forked)
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


def _watch(reader: io.BufferedReader) -> None:
    """The CLI's Ctrl-C and SIGTERM, delivered here; the CLI gone (killed): this review too."""
    for line in reader:
        if line.strip() == b"int":
            os.kill(os.getpid(), signal.SIGINT)
        elif line.strip() == b"term":
            os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGKILL)


def _run(cli: CliMain, argv: list[str], forked: ForkedReview) -> int:
    """The CLI, then what the interpreter's exit would do (Prefect drains its workers)."""
    try:
        code = cli(argv[1:], forked)
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
