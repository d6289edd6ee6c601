"""The warm review process's record: what `warm-<install>.json` says, whether it is current,
stopping it.

A warm process (`flows.local.warm.main`) has already imported reviewflow, Prefect and the model
SDKs; it forks one child per review, which runs the CLI's code path in-process, so a review
handed over skips those imports (~3-4 s). It belongs to one managed Prefect server (reuse mode
only) and to one install (`sockets.install_key`): its record, lock and logs live in that server's
Prefect home (`warm-<install>.json`, `warm-<install>.lock`, `logs/warm-<install>-*.log`), its
socket in the user's runtime directory (`flows.local.warm.sockets`). A record with `off` set
says the warm path is off for that install and socket (a socket it could not listen on): no
warm process is started for it again until the socket's path changes or `reviewflow server stop`.

No Prefect import here: the hand-over path must stay as cheap as the CLI's own start.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from flows.local.process import ServerState, is_ours, locked, read_record, stop_process
from reviewflow.fsutil import write_output

_LOG_DIR = "logs"
_KEPT_LOGS = 10  # the newest warm logs of a Prefect home (one per warm process) are kept


@dataclass(frozen=True)
class WarmState:
    """What `warm-<install>.json` records about the warm process (never a key: it has none)."""

    pid: int
    instance: str
    server_instance: str  # the managed server it was started for
    prefect_version: str
    install: str  # `install_key()` of the install it runs
    program: str  # that install, as `server status` names it: its interpreter and code
    socket: str
    log: str
    started_at: float
    off: str = ""  # why the warm path is off for this install and socket ("": it is not)
    noted: bool = False  # the user was told that it is off

    def process(self) -> ServerState:
        """The same identity check as the server's: our instance id on its command line."""
        return ServerState(self.pid, 0, self.instance, self.prefect_version, 0.0, self.started_at)


def state_file(phome: Path, install: str) -> Path:
    return phome / f"warm-{install}.json"


def lock_name(install: str) -> str:
    return f"warm-{install}.lock"


def log_path(phome: Path, install: str, stamp: str, instance: str) -> Path:
    """A new warm process's own log: one per process, never truncated by the next start."""
    return phome / _LOG_DIR / f"warm-{install}-{stamp}-{instance[-8:]}.log"


def prune_logs(phome: Path) -> None:
    """Keep the newest `_KEPT_LOGS` warm logs of `phome` (a log outlives its process)."""
    with contextlib.suppress(OSError):
        logs = sorted(
            (phome / _LOG_DIR).glob("warm-*.log"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in logs[_KEPT_LOGS:]:
            old.unlink(missing_ok=True)


def read_warm(phome: Path, install: str) -> WarmState | None:
    return read_record(state_file(phome, install), WarmState)


def write_warm(phome: Path, state: WarmState) -> None:
    write_output(state_file(phome, state.install), json.dumps(asdict(state)) + "\n")


def warm_records(phome: Path) -> list[WarmState]:
    """Every install's record in the Prefect home `phome`."""
    found = (read_record(path, WarmState) for path in sorted(phome.glob("warm-*.json")))
    return [state for state in found if state is not None]


def forget_warm(phome: Path, state: WarmState) -> None:
    """Remove the record (and socket) if they still belong to `state`'s process."""
    now = read_warm(phome, state.install)
    if now is not None and now.instance == state.instance:
        state_file(phome, state.install).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            Path(state.socket).unlink(missing_ok=True)


def current(state: WarmState | None, server: ServerState | None) -> bool:
    """True when `state` is a live warm process of ours, for `server`. (Whether its code is
    still the installed code, the warm process checks itself before each hand-over.)"""
    return (
        state is not None
        and not state.off
        and server is not None
        and state.server_instance == server.instance
        and is_ours(state.process())
        and is_ours(server)
    )


def stop_warm(phome: Path, install: str) -> WarmState | None:
    """Stop the warm process of `install` in the Prefect home `phome` and forget its record
    (an `off` one too); its state if one was running."""
    if not state_file(phome, install).exists():
        return None
    with locked(phome, lock_name(install)):
        state = read_warm(phome, install)
        if state is None:
            return None
        running = not state.off and is_ours(state.process())
        terminate(phome, state)
    return state if running else None


def stop_every_warm(phome: Path) -> list[WarmState]:
    """Stop the warm process of every install in `phome`; those that were running."""
    stopped = (stop_warm(phome, state.install) for state in warm_records(phome))
    return [state for state in stopped if state is not None]


def terminate(phome: Path, state: WarmState) -> None:
    """Stop `state`'s process (the caller holds its lock) and forget it."""
    if not state.off:
        stop_process(state.process())  # signals only a process with our instance id
    forget_warm(phome, state)


def running_warm(phome: Path) -> list[WarmState]:
    """The warm processes of every install in `phome` that are running."""
    return [s for s in warm_records(phome) if not s.off and is_ours(s.process())]
