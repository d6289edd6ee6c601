"""The warm review process, CLI side: hand a review over to it.

A hand-over sends the CLI's stdin, stdout, stderr and working directory (file descriptors) and a
JSON header (arguments, environment, umask, stdio encodings); the child that takes it replies
`taken`, then the exit code (or `declined`: the CLI runs the review itself). Nothing is sent
before both checks of `flows.local.warm.sockets` pass: a private socket directory, and a warm
process of this uid at the other end. Ctrl-C and SIGTERM are forwarded from the first moment
(one that comes before `taken` is sent right after the header). A second one is forwarded too
(the child exits 130 at once, and says so) when a child has the review; before that, or when the
child has not answered 0.5 s later, it ends the hand-over: the connection closes, which stops the
child too. So does a child that has not ended `reviewflow.cancel.GRACE_S` (and a second) after
the first: the CLI exits 130 all the same.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

from flows.local.process import read_state
from flows.local.settings import prefect_home
from flows.local.warm.sockets import install_key, peer_uid, private_dir_problem
from flows.local.warm.state import WarmState, current, read_warm, stop_warm, write_warm
from reviewflow import cancel
from reviewflow.cancel import CANCELLED_LINE, EXIT_CODE, GRACE_S

ENDED_UNEXPECTEDLY = (
    "reviewflow: error: the review ended unexpectedly in the warm review process (crashed or "
    "killed); see {log}\n"
)
CANCELLED = f"{CANCELLED_LINE}\n"
NOTE = "reviewflow: note: {what}\n"
TAKEN = b"taken\n"  # a child's first reply: the review is its own from here on
DECLINED = b"declined\n"  # instead of an exit code: nothing was done, the CLI runs the review
_TAKEN_TIMEOUT_S = 15.0  # a fork takes milliseconds; a stopped or hung warm process: run here
_CHILD_GRACE_S = GRACE_S + 1.0  # a cancelled child ends within GRACE_S: then the CLI stops waiting
_NOW_S = 0.5  # after a second signal, the child's exit code is waited for this long at most
_CWD_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY  # O_PATH: search right only


def hand_over(home: Path, argv: Sequence[str]) -> int | None:
    """Run the review `argv` in the warm process of `home` and this install: its exit code, or
    None when no warm process takes it (none runs, a stale one is stopped, a check failed) and
    the CLI runs the review itself."""
    phome = prefect_home(home)
    install = install_key()
    state = read_warm(phome, install)
    if state is None or not _stdio_open():
        return None
    if state.off:
        _note_off_once(phome, state)
        return None
    if not current(state, read_state(phome)):
        stop_warm(phome, install)
        return None
    problem = private_dir_problem(Path(state.socket).parent)
    if problem is not None:
        _note(f"not handing this review to the warm review process: {problem}")
        return None
    return _connect(state, argv)


def _connect(state: WarmState, argv: Sequence[str]) -> int | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with conn:
        try:
            conn.connect(state.socket)
        except OSError:  # just gone, or exiting
            return None
        uid = peer_uid(conn)
        if uid != os.getuid():
            _note(f"not handing this review over: {state.socket} is served by uid {uid}")
            return None
        return _converse(conn, argv, Path(state.log))


def _note(what: str) -> None:
    sys.stderr.write(NOTE.format(what=what))


def _note_off_once(phome: Path, state: WarmState) -> None:
    """Tell the user once that the warm path is off (`state.off` says why)."""
    if state.noted:
        return
    _note(off_message(state.off))
    with contextlib.suppress(OSError):
        write_warm(phome, replace(state, noted=True))


def off_message(reason: str) -> str:
    return (
        f"the warm review process is off: {reason}; reviews run in the CLI process "
        "(`reviewflow server stop` forgets this)"
    )


def _stdio_open() -> bool:
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return all(stream is not None for stream in (sys.stdin, sys.stdout, sys.stderr))


class _Abandoned(Exception):
    """A second Ctrl-C (or SIGTERM) during a hand-over: end it now."""


class _Forwarder:
    """The CLI's signal handler during a hand-over: the first Ctrl-C or SIGTERM is sent to the
    child (kept until the header is sent, if it comes before), the second ends the hand-over;
    so does a child that is still at it `_CHILD_GRACE_S` after the first."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.received: list[int] = []
        self.pending: list[bytes] = []
        self.ready = False
        self.taken = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if len(self.received) > 2:
            return  # the hand-over is being ended already
        if len(self.received) == 2 and not self.taken:
            raise _Abandoned  # no child has the review yet: nothing to wait for
        line = b"int\n" if signum == signal.SIGINT else b"term\n"
        if self.ready:
            self._send(line)
        else:
            self.pending.append(line)
        # The child ends within its grace after the first signal, at once after the second
        # (it says its exit code first, so its cancelled line is the only one).
        backstop = threading.Timer(_CHILD_GRACE_S if len(self.received) == 1 else _NOW_S, self._end)
        backstop.daemon = True
        backstop.start()

    def _end(self) -> None:
        """Stop waiting for the child: the CLI's read ends, the child finds its CLI gone."""
        with contextlib.suppress(OSError):
            self.conn.shutdown(socket.SHUT_RDWR)

    def start(self) -> None:
        """The header is sent: forward from now on (and what came before)."""
        self.ready = True
        for line in self.pending:
            self._send(line)

    def _send(self, line: bytes) -> None:
        with contextlib.suppress(OSError):
            self.conn.sendall(line)

    def cancelled(self) -> int:
        """The hand-over ended by a signal (Ctrl-C and SIGTERM alike): exit 130."""
        cancel.announce()
        return EXIT_CODE


def _converse(conn: socket.socket, argv: Sequence[str], log: Path) -> int | None:
    """Send the fds and the header, forward Ctrl-C and SIGTERM, wait for the exit code; None
    when no child took the review (the warm process was exiting, refused it, or declined)."""
    try:
        cwd = os.open(".", _CWD_FLAGS)
    except OSError:  # the CLI process says why in one line, as it would without a warm process
        return None
    forwarder = _Forwarder(conn)
    previous = {sig: signal.signal(sig, forwarder) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        reply = _exchange(conn, _header(argv), cwd, forwarder)
    except _Abandoned:
        reply = b"abandoned"
        with contextlib.suppress(OSError):  # the child reads the end of its connection: it stops
            conn.shutdown(socket.SHUT_RDWR)
    finally:
        os.close(cwd)
        if forwarder.received:  # a further signal, to this process's own handler: exit now
            cancel.note(forwarder.received, announced=False)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = _exit_code(reply, forwarder, log)
    if forwarder.received and code == EXIT_CODE:  # the child wrote the cancelled line
        cancel.note([], announced=True)
    return code


def _exit_code(reply: bytes | None, forwarder: _Forwarder, log: Path) -> int | None:
    """The child's exit code from its `reply`; None when no child took the review."""
    if reply is None or reply == DECLINED or reply == b"abandoned":
        return forwarder.cancelled() if forwarder.received else None
    try:
        return int(reply)
    except ValueError:  # no exit code: the child died (a crash, kill -9, the OOM killer)
        if forwarder.received:
            return forwarder.cancelled()
        sys.stderr.write(ENDED_UNEXPECTEDLY.format(log=log))
        return 2


def _header(argv: Sequence[str]) -> dict[str, Any]:
    umask = os.umask(0o077)
    os.umask(umask)
    return {
        "argv": [sys.argv[0], *argv],
        "environ": dict(os.environ),
        "umask": umask,
        "stdio": [[s.encoding, s.errors] for s in (sys.stdin, sys.stdout, sys.stderr)],
    }


def _exchange(
    conn: socket.socket, header: dict[str, Any], cwd: int, forwarder: _Forwarder
) -> bytes | None:
    """The hand-over itself: None when no child took it, else the child's last line (b"" when
    the connection ended without one)."""
    reader = conn.makefile("rb")
    try:
        socket.send_fds(conn, [b"F"], [0, 1, 2, cwd])
        conn.sendall(json.dumps(header).encode() + b"\n")
        forwarder.start()
        conn.settimeout(_TAKEN_TIMEOUT_S)
        if reader.readline() != TAKEN:
            return None
        forwarder.taken = True
    except OSError:  # a timeout too: closing the connection stops a child that starts late
        return None
    conn.settimeout(None)
    try:
        return reader.readline()
    except OSError:
        return b""
