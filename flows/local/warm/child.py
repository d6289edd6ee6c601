"""One review in a child forked by the warm process: the CLI's process context, then the CLI.

The child takes the CLI's stdin, stdout, stderr, working directory, argv, umask and environment
(the key arrives only there) and runs the review as the CLI would have, then reports its exit
code. From the moment it replies `taken`, a thread watches the connection: the CLI's Ctrl-C and
SIGTERM arrive there and are raised here, where `reviewflow.cancel` handles them as in a CLI
process (a cancel whose review ends by force still sends exit 130 first); and the connection's
end (the CLI killed, or a second Ctrl-C) stops this child at once, however it ended (a reset as
well as an orderly close). Its crash dump (faulthandler) and one line about its end go to the
warm process's log.
"""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
import io
import json
import os
import resource
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TextIO

from flows.local.warm.client import DECLINED, TAKEN
from reviewflow import cancel
from reviewflow.cancel import EXIT_CODE

INTERNAL_ERROR = (
    "reviewflow: error: internal error in the warm review process: {what} (details: {log})\n"
)
DECLINED_EXIT = 76  # a child's exit code: it declined (cannot enter the working directory)
STOP_EXIT = 75  # it declined because the config turns the warm process off: the parent stops


@dataclass(frozen=True)
class ForkedReview:
    """What a review run in a warm process's child is told: Prefect was imported before its
    environment was adopted, so `adopt_settings` reads Prefect's settings again if they differ;
    `decline` gives the review back to the CLI (nothing may have been written yet) and stops the
    warm process, when the config turns it off. A forked review never hands over, nor starts a
    warm process."""

    adopt_settings: Callable[[], None]
    decline: Callable[[], NoReturn]


def _failed(exc: Exception, log: TextIO, log_path: str) -> int:
    """The child's code for an exception the CLI let out: a cancel a library wrapped in its
    own error (`cancel.caused`) is a cancel, anything else an internal error (exit 2)."""
    if cancel.caused(exc):
        cancel.announce()
        return EXIT_CODE
    traceback.print_exception(exc, file=log)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(INTERNAL_ERROR.format(what=type(exc).__name__, log=log_path))
    return 2


CliMain = Callable[[Sequence[str], ForkedReview], int]
"""The CLI to run in a child: its arguments (without the program name) and the fork context."""


def run_child(
    conn: socket.socket,
    listener: socket.socket,
    cli: CliMain,
    adopt: Callable[[], None],
    log_path: str,
) -> NoReturn:
    """One review: take over the CLI's process context, run the CLI, report the exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # git's exit codes
    cancel.install(before_exit=lambda: conn.sendall(f"{EXIT_CODE}\n".encode()))
    listener.close()
    log = os.fdopen(os.dup(2), "w", buffering=1)  # the warm process's log, before stderr's swap
    faulthandler.enable(log, all_threads=True)
    done = threading.Event()
    with cancel.deferred():  # a signal before the review is this process's: cancelled then
        header, forked = _take(conn, adopt, done, log)
    code = 2
    try:
        code = _run(cli, header["argv"], forked)
    except KeyboardInterrupt:  # before the CLI ran (or after it returned)
        cancel.announce()
        code = EXIT_CODE
    except Exception as exc:  # noqa: BLE001 - a library's wrapped cancel, or else a bug
        code = _failed(exc, log, log_path)
    except BaseException as exc:  # noqa: BLE001 - the child must report a code, whatever happened
        traceback.print_exc(file=log)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(INTERNAL_ERROR.format(what=type(exc).__name__, log=log_path))
    done.set()
    _record(log, code)
    with contextlib.suppress(OSError):
        conn.sendall(f"{code}\n".encode())
    os._exit(code)


def _take(
    conn: socket.socket, adopt: Callable[[], None], done: threading.Event, log: TextIO
) -> tuple[dict[str, Any], ForkedReview]:
    """Receive the hand-over, say `taken`, watch the connection, become the CLI's process."""
    conn.settimeout(None)
    reader = conn.makefile("rb")
    try:
        header, fds = _receive(conn, reader)
        conn.sendall(TAKEN)
    except (OSError, ValueError, KeyError) as exc:  # the CLI went away, or spoke nonsense
        log.write(f"review pid {os.getpid()}: no hand-over received ({exc!r})\n")
        os._exit(2)
    threading.Thread(target=_watch, args=(reader, done), daemon=True).start()
    forked = ForkedReview(adopt, lambda: _decline(conn, done, STOP_EXIT))
    if not _enter(fds.pop()):
        _decline(conn, done, DECLINED_EXIT)  # the CLI process says why, as it would anyway
    _adopt(header, fds)
    return header, forked


def _receive(conn: socket.socket, reader: io.BufferedReader) -> tuple[dict[str, Any], list[int]]:
    """The CLI's file descriptors (stdin, stdout, stderr, working directory) and header."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 4)
    if len(fds) != 4:
        raise ValueError(f"{len(fds)} file descriptors instead of 4")
    header = json.loads(reader.readline())
    if not isinstance(header, dict):
        raise ValueError("a header that is not an object")
    return header, fds


def _enter(cwd: int) -> bool:
    """Make the CLI's working directory this one's (a deleted one too: the CLI says so)."""
    try:
        os.fchdir(cwd)
    except OSError:
        return False
    finally:
        os.close(cwd)
    return True


def _decline(conn: socket.socket, done: threading.Event, code: int) -> NoReturn:
    """Give the review back to the CLI (nothing was written), then exit with `code`."""
    done.set()
    with contextlib.suppress(OSError):
        conn.sendall(DECLINED)
    os._exit(code)


def _record(log: TextIO, code: int) -> None:
    """One line per review in the warm process's log: its exit code, CPU and peak RSS."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    line = f"review pid {os.getpid()}: exit {code}, CPU {cpu:.2f} s, peak RSS {own.ru_maxrss} KiB\n"
    with contextlib.suppress(OSError, ValueError):
        log.write(line)


def _adopt(header: dict[str, Any], fds: list[int]) -> None:
    """The CLI's stdio, environment and umask, as if this process had been started there."""
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    (in_enc, in_err), (out_enc, out_err), (err_enc, err_err) = header["stdio"]
    # As the interpreter makes them, encoded as in the CLI: stdout line-buffered on a terminal,
    # stderr always (else a line written to it before the review, the estimate, would come out
    # after the review's stdout in a log that takes both, as a CI's does).
    sys.stdin = open(0, encoding=in_enc, errors=in_err, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=out_enc, errors=out_err, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", 1, err_enc, err_err, closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(header["environ"])
    tempfile.tempdir = None  # read from TMPDIR again (the warm process cached its own)
    time.tzset()  # and TZ
    os.umask(header["umask"])
    sys.argv = list(header["argv"])


def _watch(reader: io.BufferedReader, done: threading.Event) -> None:
    """The CLI's Ctrl-C and SIGTERM, delivered here; the CLI gone: this review too, at once
    (an orderly end of the connection, or a reset when the CLI closed it without reading)."""
    with contextlib.suppress(OSError, ValueError):
        for line in reader:
            if line.strip() == b"int":
                os.kill(os.getpid(), signal.SIGINT)
            elif line.strip() == b"term":
                os.kill(os.getpid(), signal.SIGTERM)
    if not done.is_set():
        os.kill(os.getpid(), signal.SIGKILL)


def _run(cli: CliMain, argv: list[str], forked: ForkedReview) -> int:
    """The CLI, then what the interpreter's exit would do (Prefect drains its workers)."""
    try:
        cancel.check()  # a signal that came during the hand-over
        code = cli(argv[1:], forked)
    except SystemExit as exc:  # argparse: --help, a bad flag
        code = _exit_code(exc)
    except KeyboardInterrupt:
        cancel.announce()
        code = EXIT_CODE
    cancel.finish()  # the review is over: a signal no longer cuts anything
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
