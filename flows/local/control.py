"""`reviewflow server status|stop|prepare`: the managed servers and warm processes of a home.

Each Prefect version has its own managed server (and Prefect home), each install its own warm
process: `status` shows this install's server and warm process first, then whatever else runs
under the same reviewflow home (other Prefect versions' servers, other installs' warm
processes); `stop` stops all of them, so nothing of reviewflow runs for that home afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flows.local.api import drain_prefect
from flows.local.process import (
    LOG_FILE,
    STATE_FILE,
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
from flows.local.settings import prefect_home, prefect_homes, prefect_version
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


# The server `prepare` starts exits by itself after this long if `prepare` dies before it stops it.
_PREPARE_IDLE_MINUTES = 1.0


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
            if booting.process is not None:
                booting.process.wait()
    return Prepared(phome, time.monotonic() - started)
