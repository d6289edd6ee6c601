"""`reviewflow server status|stop`: the managed servers and warm processes of a reviewflow home.

Each Prefect version has its own managed server (and Prefect home), each install its own warm
process: `status` shows this install's server and warm process first, then whatever else runs
under the same reviewflow home (other Prefect versions' servers, other installs' warm
processes); `stop` stops all of them, so nothing of reviewflow runs for that home afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flows.local.api import drain_prefect
from flows.local.process import (
    LOG_FILE,
    STATE_FILE,
    ServerState,
    forget_state,
    is_ours,
    locked,
    read_state,
    server_version,
    stop_process,
)
from flows.local.settings import prefect_home, prefect_homes
from flows.local.warm.sockets import install_key
from flows.local.warm.state import WarmState, read_warm, running_warm, stop_every_warm


@dataclass(frozen=True)
class ServerStatus:
    """What `reviewflow server status` shows."""

    home: Path
    state: ServerState | None
    running: bool
    warm: WarmState | None = None  # this install's warm review process (running or off)
    others: list[str] = field(default_factory=list)  # other versions' and installs' processes

    def render(self) -> str:
        log = self.home / LOG_FILE
        lines = [f"not running (Prefect home: {self.home})"]
        if self.running and self.state is not None:
            ui = self.state.url.removesuffix("/api")
            lines = [
                f"running: pid {self.state.pid}, Prefect {self.state.prefect_version}, "
                f"exits after {self.state.idle_minutes:g} idle minutes",
                f"open {ui} in a browser to see flow runs, task runs and artifacts",
                f"or: PREFECT_API_URL={self.state.url} prefect flow-run ls",
            ]
        lines.append(self._warm_line())
        if self.running:
            lines += [f"Prefect home: {self.home}", f"log: {log}"]
        lines += [f"also running: {other}" for other in self.others]
        return "".join(f"{line}\n" for line in lines)

    def _warm_line(self) -> str:
        if self.warm is None:
            return "no warm process"
        if self.warm.off:
            return f"warm review process: off ({self.warm.off})"
        return f"warm review process: pid {self.warm.pid} (log: {self.warm.log})"


def server_status(home: Path) -> ServerStatus:
    """The managed server of the reviewflow home `home` for this install, and what else runs."""
    phome, install = prefect_home(home), install_key()
    state = read_state(phome)
    running = state is not None and is_ours(state) and server_version(state.url) is not None
    warm = read_warm(phome, install)
    if warm is not None and not warm.off and warm not in running_warm(phome):
        warm = None
    others = []
    for other in prefect_homes(home):
        server = read_state(other)
        if other != phome and server is not None and is_ours(server):
            version = server.prefect_version or "?"
            others.append(f"the server of Prefect {version}, pid {server.pid} ({other})")
        for process in running_warm(other):
            if (other, process.install) != (phome, install):
                others.append(f"a warm review process of {process.program}, pid {process.pid}")
    return ServerStatus(phome, state, running, warm, others)


def stop_server(home: Path) -> list[str]:
    """Stop every managed server and warm process of the reviewflow home `home` (every Prefect
    version, every install); one line for each that was running."""
    drain_prefect()
    stopped = []
    for phome in prefect_homes(home):
        for warm in stop_every_warm(phome):
            stopped.append(f"stopped the warm review process (pid {warm.pid})")
        if not (phome / STATE_FILE).exists():
            continue
        with locked(phome):
            state = read_state(phome)
            if state is None:
                continue
            running = is_ours(state)
            stop_process(state)
            forget_state(phome, state.instance)
        if running:
            stopped.append(f"stopped (pid {state.pid}, Prefect {state.prefect_version or '?'})")
    return stopped
