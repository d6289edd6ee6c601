"""`reviewflow server status|stop|prepare`: the managed server and its warm process, together."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from flows.local.api import drain_prefect
from flows.local.process import (
    LOG_FILE,
    ServerError,
    ServerState,
    forget_state,
    is_ours,
    locked,
    read_state,
    server_version,
    spawn,
    stop_process,
    wait_ready,
    write_state,
)
from flows.local.settings import prefect_home, prefect_version
from flows.local.warm.state import stop_warm, warm_pid

# The server `prepare` starts exits by itself after this long if `prepare` dies before it stops it.
_PREPARE_IDLE_MINUTES = 1.0


@dataclass(frozen=True)
class ServerStatus:
    """What `reviewflow server status` shows."""

    home: Path
    state: ServerState | None
    running: bool
    warm_pid: int | None = None  # the warm review process (flows.warm), if one runs

    def render(self) -> str:
        log = self.home / LOG_FILE
        warm = f"warm review process: pid {self.warm_pid}" if self.warm_pid else "no warm process"
        if not self.running or self.state is None:
            return f"not running (Prefect home: {self.home})\n{warm}\n"
        ui = self.state.url.removesuffix("/api")
        return (
            f"running: pid {self.state.pid}, Prefect {self.state.prefect_version}, "
            f"exits after {self.state.idle_minutes:g} idle minutes\n"
            f"open {ui} in a browser to see flow runs, task runs and artifacts\n"
            f"or: PREFECT_API_URL={self.state.url} prefect flow-run ls\n"
            f"{warm}\nPrefect home: {self.home}\nlog: {log}\n"
        )


def server_status(home: Path) -> ServerStatus:
    """The managed server of the reviewflow home `home`, if one is running."""
    phome = prefect_home(home)
    state = read_state(phome)
    running = state is not None and is_ours(state) and server_version(state.url) is not None
    return ServerStatus(phome, state, running, warm_pid(phome))


def stop_server(home: Path) -> ServerState | None:
    """Stop the managed server of `home` and its warm process; the server's state, or None."""
    phome = prefect_home(home)
    if not phome.exists():
        return None
    stop_warm(phome)
    drain_prefect()
    with locked(phome):
        state = read_state(phome)
        if state is None:
            return None
        running = is_ours(state)
        stop_process(state)
        forget_state(phome, state.instance)
    return state if running else None


@dataclass(frozen=True)
class Prepared:
    """What `reviewflow server prepare` did."""

    home: Path
    seconds: float
    running: ServerState | None = None  # a server of this Prefect already runs: left alone

    def render(self) -> str:
        if self.running is not None:
            return (
                f"the local Prefect server runs on {self.home} (pid {self.running.pid}): "
                "its home is prepared; left as it is\n"
            )
        return (
            f"prepared {self.home} in {self.seconds:.1f} s: database migrated, block types "
            "registered, no process left running\n"
        )


def prepare_server(home: Path, env: Mapping[str, str]) -> Prepared:
    """Give the managed Prefect home of `home` a full first start (its database migrated, block
    types registered), then stop that server: a review there then pays a cold start, never a
    first one. A server of this Prefect that runs there is left alone; one of another fails."""
    phome, version, started = prefect_home(home), prefect_version(), time.monotonic()
    with locked(phome):
        old = read_state(phome)
        if old is not None and is_ours(old):
            if server_version(old.url) == version:
                return Prepared(phome, 0.0, old)
            raise ServerError(
                f"a local Prefect server that is not Prefect {version}'s runs on {phome} "
                f"(pid {old.pid}): stop it first with `reviewflow server stop`"
            )
        if old is not None:
            forget_state(phome, old.instance)
        booting = spawn(phome, env, _PREPARE_IDLE_MINUTES, 0, full_start=True)
        write_state(phome, booting.state)  # found and replaced if this process dies meanwhile
        try:
            wait_ready(booting)
        finally:
            stop_process(booting.state)
            forget_state(phome, booting.state.instance)
            booting.process.wait()
    return Prepared(phome, time.monotonic() - started)
