"""The warm review process, CLI side: hand a review over to it, start it for the next one.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from types import FrameType

from flows.local.process import ServerError, ServerState, inherited_env, locked, read_state
from flows.local.settings import TELEMETRY_OFF, prefect_home, prefect_version
from flows.local.warm.state import (
    LOCK_FILE,
    LOG_FILE,
    SOCKET_FILE,
    STATE_FILE,
    WarmState,
    current,
    fingerprint,
    read_warm,
    stop_warm,
    terminate,
)
from reviewflow.fsutil import write_output

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]
ENDED_UNEXPECTEDLY = (
    "reviewflow: the warm review process ended unexpectedly; see {log} "
    "(`reviewflow server stop` stops it; the next review starts a new one)\n"
)
TAKEN = b"taken\n"  # a child's first reply: the review is its own from here on
_TAKEN_TIMEOUT_S = 15.0  # a fork takes milliseconds; a stopped or hung warm process: run here
_SECRET_WORDS = ("KEY", "AUTH", "PASSWORD", "SECRET", "TOKEN")  # never in the warm process


def hand_over(home: Path, argv: Sequence[str]) -> int | None:
    """Run the review `argv` in the warm process of `home`: its exit code, or None when there
    is no current warm process (a stale one is stopped) and the CLI runs the review itself."""
    phome = prefect_home(home)
    state = read_warm(phome)
    if state is None or not _stdio_open():
        return None
    if not current(state, read_state(phome)):
        stop_warm(phome)
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(phome / SOCKET_FILE))
    except OSError:  # still importing (its socket is not there yet), or just gone
        conn.close()
        return None
    with conn:
        return _converse(conn, argv, phome / LOG_FILE)


def _stdio_open() -> bool:
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def _converse(conn: socket.socket, argv: Sequence[str], log: Path) -> int | None:
    """Send the fds and the header, forward Ctrl-C and SIGTERM, wait for the exit code; None
    when no child took the review (the warm process was exiting, or does not answer)."""
    umask = os.umask(0o077)
    os.umask(umask)
    header = {
        "argv": [sys.argv[0], *argv],
        "cwd": os.getcwd(),
        "environ": dict(os.environ),
        "umask": umask,
        "stdio": [[s.encoding, s.errors] for s in (sys.stdin, sys.stdout, sys.stderr)],
    }
    reader = conn.makefile("rb")
    try:
        socket.send_fds(conn, [b"F"], [0, 1, 2])
        conn.sendall(json.dumps(header).encode() + b"\n")
        conn.settimeout(_TAKEN_TIMEOUT_S)
        if reader.readline() != TAKEN:
            return None
    except OSError:  # a timeout too: closing the connection stops a child that starts late
        return None
    conn.settimeout(None)
    forwarded: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        forwarded.append(signum)
        with contextlib.suppress(OSError):
            conn.sendall(b"int\n" if signum == signal.SIGINT else b"term\n")

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        reply = reader.readline()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        return int(reply)
    except ValueError:
        if forwarded and forwarded[-1] == signal.SIGTERM:  # the child died of it: so does this
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        sys.stderr.write(ENDED_UNEXPECTEDLY.format(log=log))
        return 2


def start_warm(home: Path, env: Mapping[str, str], server: ServerState, program: str) -> None:
    """Start a warm process for the next review (detached; this CLI does not wait for it),
    unless a current one exists or another CLI is starting one right now. `program` is the
    module that runs it (`flows.local.warm.main.main` with the CLI to run per review). It only
    saves the next review time: a failure to start it (OSError, ServerError) costs nothing."""
    with contextlib.suppress(OSError, ServerError):
        _start(prefect_home(home), env, server, program)


def _start(phome: Path, env: Mapping[str, str], server: ServerState, program: str) -> None:
    with locked(phome, LOCK_FILE, wait=False) as mine:
        old = read_warm(phome)
        if not mine or current(old, server):
            return
        if old is not None:
            terminate(phome, old)
        instance = f"reviewflow-warm-{uuid.uuid4().hex}"
        args = [
            sys.executable, "-m", program, "--home", str(phome), "--instance", instance,
            "--server-instance", server.instance, "--idle-seconds", str(server.idle_minutes * 60),
        ]  # fmt: skip
        with open(phome / LOG_FILE, "wb") as out:  # one log per warm process
            process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=_PACKAGE_ROOT,
                env=warm_env(env, phome, server.url),
            )
        state = WarmState(
            process.pid, instance, server.instance, prefect_version(), fingerprint(), time.time()
        )
        write_output(phome / STATE_FILE, json.dumps(asdict(state)) + "\n")


def warm_env(env: Mapping[str, str], phome: Path, url: str) -> dict[str, str]:
    """The warm process's environment: a few inherited basics and the Prefect variables of the
    CLI that starts it, never a secret one. The reviews it forks most likely have the same, and
    then keep the Prefect settings it read (`flows.local.warm.prep`)."""
    out = inherited_env(env)
    for name, value in env.items():
        upper = name.upper()
        if upper.startswith("PREFECT_") and not any(word in upper for word in _SECRET_WORDS):
            out[name] = value
    out.update(PREFECT_HOME=str(phome), PREFECT_API_URL=url, **TELEMETRY_OFF)
    return out
