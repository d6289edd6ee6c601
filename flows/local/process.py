"""The managed Prefect server's process mechanics: state file, lock, identity, start and stop.

No Prefect import here: all of this runs before the CLI pays for importing Prefect.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

from reviewflow.errors import ReviewError
from reviewflow.fsutil import PRIVATE_UMASK, private_dirs, write_output

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
LOG_FILE = "server.log"
DATABASE_FILE = "prefect.db"
_SERVER_MODULE = "flows.local.server_main"
LOOPBACK = "127.0.0.1"  # where the managed server listens unless `prefect.server_host` names one
R = TypeVar("R")
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# What the server inherits from the CLI's environment; everything else (model keys, tokens,
# the user's own PREFECT_* settings) stays behind.
_INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")
_INHERITED_PATHS = ("PYTHONPATH", "VIRTUAL_ENV")
# Prefect's task run recorder writes one transaction per event by default: a 40-file review's
# ~400 events then kept the server busy for seconds after the run, and the next run's first API
# call waited behind them. Batched, the records land within a second (the interval must be a
# whole number: Prefect truncates it, and 0 would spin).
_RECORDER = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}
# Services a review's server has no use for: deployment schedules and late runs, automations,
# workers' health, pause timeouts, and the clean-up of cancelled runs' children (a cancelled
# review ends its own task runs). Each costs start-up time (automations build two HTTP clients,
# ~0.9 s of CPU here) and idle CPU; and the clean-up's first pass took SQLite's write lock just
# as a cold start's review created its flow run, in 2-4 of 10 cold starts: a 503, which Prefect's
# client retries after ~2 s. Task runs are still recorded, for the UI. Events are not stored
# (the event persister): they repeat the task runs' states, and were 58% of the database after
# a 1,000-file review (42.7 MB with them, 17.8 MB without; bench/RESULTS.md).
_UNUSED_SERVICES = {
    f"PREFECT_SERVER_SERVICES_{name}_ENABLED": "false"
    for name in (
        "SCHEDULER", "LATE_RUNS", "TRIGGERS", "FOREMAN", "PAUSE_EXPIRATIONS",
        "CANCELLATION_CLEANUP", "EVENT_PERSISTER",
    )
}  # fmt: skip
# Once a home's first start has registered Prefect's block types, later starts skip it, and
# with it importing every installed Prefect collection to see if they changed (prefect-dask
# imports Dask: ~0.7 s here).
_BLOCKS_REGISTERED = {
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
    "PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
}
_READY_LIMIT_S = 600.0  # a safety net only: a live server is waited for through its migrations
_STOP_GRACE_S = 10.0


class ServerError(ReviewError):
    """The managed local Prefect server could not be started (or stopped)."""


class HomeUnusable(ServerError):
    """A managed Prefect home whose lock cannot be taken: `path` could not be used (`reason`)."""

    def __init__(self, message: str, path: Path, reason: str) -> None:
        super().__init__(message)
        self.path, self.reason = path, reason


@dataclass(frozen=True)
class ServerState:
    """What the state file records about the running managed server."""

    pid: int
    port: int
    instance: str
    prefect_version: str
    idle_minutes: float
    started_at: float
    host: str = LOOPBACK  # the address it listens on (and its URL names)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/api"


def read_state(home: Path) -> ServerState | None:
    """The recorded server, or None when there is none or the file is unreadable."""
    return read_record(home / STATE_FILE, ServerState)


def read_record(path: Path, kind: Callable[..., R]) -> R | None:
    """A state file's record (JSON of `kind`'s fields), or None when missing or unreadable."""
    try:
        return kind(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_state(home: Path, state: ServerState) -> None:
    write_output(home / STATE_FILE, json.dumps(asdict(state)) + "\n")


def forget_state(home: Path, instance: str) -> None:
    """Remove the state file if it still names the server `instance`."""
    current = read_state(home)
    if current is not None and current.instance == instance:
        (home / STATE_FILE).unlink(missing_ok=True)


@contextlib.contextmanager
def locked(home: Path, name: str = LOCK_FILE, *, wait: bool = True) -> Iterator[bool]:
    """Hold a lock of the managed home (by default the server's: one process at a time checks,
    starts or stops it); without `wait`, yields False at once when another process holds it."""
    try:
        private_dirs(home)
        handle = open(home / name, "a+")  # noqa: SIM115 - closed below, after the lock
    except OSError as exc:
        raise HomeUnusable(
            f"cannot use {home} as the local Prefect server's home: {exc.strerror} "
            "(it lives under the reviewflow home; move what is there, or set PREFECT_API_URL)",
            Path(exc.filename) if exc.filename else home,
            exc.strerror or str(exc),
        ) from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_ours(state: ServerState) -> bool:
    """True while `state.pid` is a live server process started with `state.instance`."""
    try:
        raw = Path(f"/proc/{state.pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return _ps_args(state.pid, state.instance) if not Path("/proc/self").exists() else False
    except OSError:
        return False
    return state.instance in raw.decode(errors="replace").split("\0")


def _ps_args(pid: int, instance: str) -> bool:
    """Where there is no /proc (macOS): the process's arguments through ps."""
    done = subprocess.run(
        ["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True, check=False
    )
    return instance in done.stdout.split()


def server_version(url: str, timeout: float = 2.0) -> str | None:
    """The Prefect version the API at `url` reports, or None if nothing answers there."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{url}/admin/version", timeout=timeout) as response:
            version = json.loads(response.read())
    except (OSError, ValueError):
        return None
    return version if isinstance(version, str) else None


def is_serving(state: ServerState, version: str) -> bool:
    """Our process, alive, answering with the expected Prefect version (a request: resets idle)."""
    return is_ours(state) and server_version(state.url) == version


def stop_process(state: ServerState, grace: float = _STOP_GRACE_S, *, kill: bool = True) -> None:
    """Stop the recorded server if (and only if) it is ours: SIGTERM, and wait up to `grace`
    until it is gone; then (with `kill`) SIGKILL, and wait again."""
    steps = ((signal.SIGTERM, grace), (signal.SIGKILL, _STOP_GRACE_S))
    for sig, wait in steps if kill else steps[:1]:
        if not is_ours(state):
            return
        signal_process(state.pid, sig)
        deadline = time.monotonic() + wait
        while is_ours(state) and time.monotonic() < deadline:
            _reap(state.pid)
            time.sleep(0.05)


def signal_process(pid: int, sig: int) -> None:
    """Send `sig` to `pid` (gone already: nothing to do); ServerError when not permitted (a
    process of another user)."""
    try:
        _kill(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        raise ServerError(f"not permitted to signal pid {pid} (another user's process?)") from None


_kill = os.kill  # the one call that signals a managed process (tests make it fail with EPERM)


def _reap(pid: int) -> None:
    """Collect the exit status if the server is this process's own child (else a no-op)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def inherited_env(env: Mapping[str, str]) -> dict[str, str]:
    """The few variables the server inherits from the CLI's environment."""
    return {name: env[name] for name in _INHERITED + _INHERITED_PATHS if name in env}


def server_env(
    env: Mapping[str, str], home: Path, url: str, *, full_start: bool = False
) -> dict[str, str]:
    """The server's whole environment: a few inherited basics and its own Prefect settings.
    A `full_start` registers block types even on a home whose database exists."""
    out = inherited_env(env)
    out.update(
        PREFECT_HOME=str(home),
        PREFECT_API_URL=url,
        PREFECT_UI_API_URL=url,
        DO_NOT_TRACK="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        PREFECT_LOGGING_LEVEL="WARNING",
        **_RECORDER,
        **_UNUSED_SERVICES,
    )
    if not full_start and (home / DATABASE_FILE).exists():  # not its first start
        out.update(_BLOCKS_REGISTERED)
    return out


def bind_port(preferred: int, host: str = LOOPBACK) -> socket.socket:
    """A listening socket on `host`: the preferred port if free, else any free one."""
    try:
        family = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror:
        raise ServerError(
            f"the local Prefect server cannot listen on {host}: unknown host"
        ) from None
    error = "no free port"
    for port in (preferred, 0) if preferred else (0,):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            error = (exc.strerror or error).lower()
            continue
        sock.listen(128)
        return sock
    raise ServerError(f"the local Prefect server cannot listen on {host}: {error}")


@dataclass
class Booting:
    """A server process that has been started but may not answer yet (`process` is None when
    another process started it)."""

    process: subprocess.Popen[bytes] | None
    state: ServerState
    log: Path

    def ended(self) -> bool:
        if self.process is not None:
            return self.process.poll() is not None
        return not is_ours(self.state)


LOGS_KEPT = 5  # server.log.1 (the previous server's) to server.log.5
LOG_KEPT_BYTES = 1 << 20  # of a log moved aside, its last MiB (where a crash's lines are)


def rotate_log(log: Path) -> None:
    """Move `log` aside as `log.1` (its last LOG_KEPT_BYTES), `.1` to `.2`..., the oldest of
    LOGS_KEPT dropped: a new server's log never overwrites the one before."""
    if not log.exists():
        return
    for n in range(LOGS_KEPT - 1, 0, -1):
        older = log.with_name(f"{log.name}.{n}")
        if older.exists():
            older.replace(log.with_name(f"{log.name}.{n + 1}"))
    with log.open("rb") as source:
        source.seek(max(0, log.stat().st_size - LOG_KEPT_BYTES))
        tail = source.read()
    kept = log.with_name(f"{log.name}.1")
    fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(tail)
    log.unlink()


def spawn(
    home: Path,
    env: Mapping[str, str],
    idle_minutes: float,
    port: int,
    *,
    full_start: bool = False,
    host: str = LOOPBACK,
) -> Booting:
    """Start a detached server on a socket bound here, on `host` (so its URL is known at once);
    a `full_start` does all a home's first start does (`server_env`)."""
    sock = bind_port(port, host)
    instance = f"reviewflow-{uuid.uuid4().hex}"
    bound = sock.getsockname()[1]
    state = ServerState(0, bound, instance, "", idle_minutes, time.time(), host)
    args = [
        sys.executable, "-m", _SERVER_MODULE, "--fd", str(sock.fileno()),
        "--idle-seconds", str(idle_minutes * 60), "--instance", instance, "--home", str(home),
    ]  # fmt: skip
    log = home / LOG_FILE
    rotate_log(log)  # the previous server's lines (a crash's) stay in server.log.1
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with sock, os.fdopen(fd, "wb") as out:
        process = subprocess.Popen(
            args,
            pass_fds=(sock.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=_PACKAGE_ROOT,
            env=server_env(env, home, state.url, full_start=full_start),
            umask=PRIVATE_UMASK,  # its database and files are the user's alone
        )
    return Booting(process, replace(state, pid=process.pid), log)


def wait_ready(booting: Booting) -> str:
    """Wait until the server answers (through a first run's migrations); its Prefect version."""
    deadline = time.monotonic() + _READY_LIMIT_S
    while time.monotonic() < deadline:
        version = server_version(booting.state.url, timeout=1.0)
        if version is not None:
            return version
        if booting.ended():
            raise ServerError(
                f"the local Prefect server exited while starting: {log_tail(booting.log)} "
                f"(log: {booting.log})"
            )
        time.sleep(0.05)
    stop_process(booting.state)
    raise ServerError(f"the local Prefect server did not answer in time (log: {booting.log})")


def log_tail(log: Path, lines: int = 3) -> str:
    """The last non-empty lines of the server's log, joined into one line."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "no log"
    tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(tail) or "empty log"
