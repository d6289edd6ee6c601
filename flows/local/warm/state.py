"""The warm review process's record: what `warm.json` says, whether it is current, stopping it.

A warm process (`flows.local.warm.main`) has already imported reviewflow, Prefect and the model
SDKs; it forks one child per review, which runs the CLI's code path in-process, so a review
handed over skips those imports (~3-4 s). It belongs to one managed Prefect server (reuse mode
only) and lives in that server's Prefect home: `warm.json` (its state), `warm.sock` (0600; the
CLI sends its stdin, stdout and stderr and a JSON header there) and `warm.log`.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from flows.local.process import ServerState, is_ours, locked, read_record, stop_process
from flows.local.settings import prefect_version

STATE_FILE = "warm.json"
SOCKET_FILE = "warm.sock"
LOG_FILE = "warm.log"
LOCK_FILE = "warm.lock"
_PACKAGE_ROOT = Path(__file__).resolve().parents[3]
_PACKAGES = ("flows", "tasks", "reviewflow")
_SOURCE_SUFFIXES = (".py", ".j2", ".json", ".md")


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


def stop_warm(phome: Path) -> WarmState | None:
    """Stop the warm process of the Prefect home `phome`; its state if one was running."""
    if not (phome / STATE_FILE).exists():
        return None
    with locked(phome, LOCK_FILE):
        state = read_warm(phome)
        if state is None:
            return None
        running = is_ours(state.process())
        terminate(phome, state)
    return state if running else None


def terminate(phome: Path, state: WarmState) -> None:
    """Stop `state`'s process (the caller holds the warm lock) and forget it."""
    stop_process(state.process())  # signals only a process with our instance id
    forget_warm(phome, state)


def warm_pid(phome: Path) -> int | None:
    """The warm process's pid, if one of ours is running."""
    state = read_warm(phome)
    return state.pid if state is not None and is_ours(state.process()) else None
