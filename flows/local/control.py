"""`reviewflow server status|stop`: the managed server and its warm process, together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flows.local.api import drain_prefect
from flows.local.process import (
    LOG_FILE,
    ServerState,
    forget_state,
    is_ours,
    locked,
    read_state,
    server_version,
    stop_process,
)
from flows.local.settings import prefect_home
from flows.local.warm.sockets import install_key
from flows.local.warm.state import read_warm, running_warm, stop_every_warm


@dataclass(frozen=True)
class ServerStatus:
    """What `reviewflow server status` shows."""

    home: Path
    state: ServerState | None
    running: bool
    warm: str = "no warm process"  # this install's warm review process

    def render(self) -> str:
        log = self.home / LOG_FILE
        warm = self.warm
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
    return ServerStatus(phome, state, running, _warm_line(phome))


def _warm_line(phome: Path) -> str:
    state = read_warm(phome, install_key())
    if state is not None and state.off:
        return f"warm review process: off ({state.off})"
    if state is None or state not in running_warm(phome):
        return "no warm process"
    return f"warm review process: pid {state.pid} (log: {state.log})"


def stop_server(home: Path) -> ServerState | None:
    """Stop the managed server of `home` and its warm process; the server's state, or None."""
    phome = prefect_home(home)
    if not phome.exists():
        return None
    stop_every_warm(phome)
    drain_prefect()
    with locked(phome):
        state = read_state(phome)
        if state is None:
            return None
        running = is_ours(state)
        stop_process(state)
        forget_state(phome, state.instance)
    return state if running else None
