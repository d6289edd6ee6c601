"""The warm review process, CLI side: find it, hand a review over to it, start and stop it.

A warm process (`flows.warm_main`) has already imported reviewflow, Prefect and the model SDKs;
it forks one child per review, which runs this same CLI code path in-process, so a review
handed over skips those imports (~3-4 s). It belongs to one managed Prefect server (reuse mode
only) and lives in that server's Prefect home: `warm.json` (its state), `warm.sock` (0600; the
CLI sends its stdin, stdout and stderr and a JSON header there) and `warm.log`.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType

from flows.local_server import TELEMETRY_OFF, prefect_home, prefect_version
from flows.server_process import (
    ServerError,
    ServerState,
    inherited_env,
    is_ours,
    locked,
    read_record,
    read_state,
    stop_process,
)
from reviewflow.ci import ci_variables
from reviewflow.fsutil import write_output
from reviewflow.home import home_dir

STATE_FILE = "warm.json"
SOCKET_FILE = "warm.sock"
LOG_FILE = "warm.log"
LOCK_FILE = "warm.lock"
_MODULE = "flows.warm_main"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = ("flows", "tasks", "reviewflow")
_SOURCE_SUFFIXES = (".py", ".j2", ".json", ".md")
ENDED_UNEXPECTEDLY = (
    "reviewflow: the warm review process ended unexpectedly; see {log} "
    "(`reviewflow server stop` stops it; the next review starts a new one)\n"
)
TAKEN = b"taken\n"  # a child's first reply: the review is its own from here on
_TAKEN_TIMEOUT_S = 15.0  # a fork takes milliseconds; a stopped or hung warm process: run here
_SECRET_WORDS = ("KEY", "AUTH", "PASSWORD", "SECRET", "TOKEN")  # never in the warm process
# Set in a forked review child: Prefect was imported before this review's environment was set.
FORKED = False


@dataclass(frozen=True)
class WarmState:
    """What `warm.json` records about the warm process (never a key: it has none)."""

    pid: int
    instance: str
    server_instance: str  # the managed server it was started for
    prefect_version: str
    fingerprint: str
    started_at: float

    def process(self) -> ServerState:
        """The same identity check as the server's: our instance id on its command line."""
        return ServerState(self.pid, 0, self.instance, self.prefect_version, 0.0, self.started_at)


def fingerprint() -> str:
    """Changes when reviewflow's code or its dependencies change (~2 ms): Prefect's version,
    the interpreter, site-packages' mtime (an install or upgrade touches it) and the names,
    sizes and mtimes of our packages' source files."""
    digest = hashlib.sha256()
    digest.update(f"{prefect_version()}\0{sys.executable}\0".encode())
    with contextlib.suppress(OSError):
        digest.update(str(os.stat(sysconfig.get_paths()["purelib"]).st_mtime_ns).encode())
    for package in _PACKAGES:
        for directory, dirs, files in os.walk(_PACKAGE_ROOT / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(_SOURCE_SUFFIXES):
                    stat = os.stat(os.path.join(directory, name))
                    digest.update(
                        f"{directory}/{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode()
                    )
    return digest.hexdigest()


def read_warm(phome: Path) -> WarmState | None:
    return read_record(phome / STATE_FILE, WarmState)


def forget_warm(phome: Path, state: WarmState) -> None:
    """Remove the state file (and socket) if they still belong to `state`'s process."""
    current = read_warm(phome)
    if current is not None and current.instance == state.instance:
        (phome / STATE_FILE).unlink(missing_ok=True)
        (phome / SOCKET_FILE).unlink(missing_ok=True)


def current(state: WarmState | None, server: ServerState | None) -> bool:
    """True when `state` is a live warm process of ours, for `server`, of this code."""
    return (
        state is not None
        and server is not None
        and state.server_instance == server.instance
        and is_ours(state.process())
        and is_ours(server)
        and state.fingerprint == fingerprint()
    )


def entry(argv: Sequence[str] | None = None) -> int:
    """The `reviewflow` command. A review that a warm process may take is handed over before
    the CLI's own imports (pydantic and the config schema, ~0.3 s); the child then decides
    everything else as the CLI would (`prefect.server_reuse` included). Anything else, or a
    review no warm process takes, runs `flows.cli.main` here."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _may_hand_over(args, os.environ):
        code = hand_over(home_dir(os.environ), args)
        if code is not None:
            return code
    from flows.cli import main

    return main(args)


def _may_hand_over(args: Sequence[str], env: Mapping[str, str]) -> bool:
    """A review through the managed server in reuse mode, as far as argv and env tell."""
    return (
        args[:1] == ["review"]
        and not {"--preview", "--no-server-reuse", "-h", "--help"} & set(args)
        and not env.get("PREFECT_API_URL")
        and not ci_variables(env)
    )


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


def start_warm(home: Path, env: Mapping[str, str], server: ServerState) -> None:
    """Start a warm process for the next review (detached; this CLI does not wait for it),
    unless a current one exists or another CLI is starting one right now. It only saves the
    next review time: a failure to start it (OSError, ServerError) costs nothing else."""
    with contextlib.suppress(OSError, ServerError):
        _start(prefect_home(home), env, server)


def _start(phome: Path, env: Mapping[str, str], server: ServerState) -> None:
    with locked(phome, LOCK_FILE, wait=False) as mine:
        old = read_warm(phome)
        if not mine or current(old, server):
            return
        if old is not None:
            _stop(phome, old)
        instance = f"reviewflow-warm-{uuid.uuid4().hex}"
        args = [
            sys.executable, "-m", _MODULE, "--home", str(phome), "--instance", instance,
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
    then keep the Prefect settings it read (`flows.warm_prep`)."""
    out = inherited_env(env)
    for name, value in env.items():
        upper = name.upper()
        if upper.startswith("PREFECT_") and not any(word in upper for word in _SECRET_WORDS):
            out[name] = value
    out.update(PREFECT_HOME=str(phome), PREFECT_API_URL=url, **TELEMETRY_OFF)
    return out


def stop_warm(phome: Path) -> WarmState | None:
    """Stop the warm process of the Prefect home `phome`; its state if one was running."""
    if not (phome / STATE_FILE).exists():
        return None
    with locked(phome, LOCK_FILE):
        state = read_warm(phome)
        if state is None:
            return None
        running = is_ours(state.process())
        _stop(phome, state)
    return state if running else None


def _stop(phome: Path, state: WarmState) -> None:
    stop_process(state.process())  # signals only a process with our instance id
    forget_warm(phome, state)


def warm_pid(phome: Path) -> int | None:
    """The warm process's pid, if one of ours is running."""
    state = read_warm(phome)
    return state.pid if state is not None and is_ours(state.process()) else None


def adopt_environment() -> None:
    """In a forked review: Prefect's settings and logging config as this review's environment
    (and the CLI's Prefect settings, now in `os.environ`) makes them. A no-op elsewhere."""
    if not FORKED:
        return
    from flows.warm_prep import adopt_settings

    adopt_settings()
