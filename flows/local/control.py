"""`reviewflow server status|stop|prepare`: the managed servers and warm processes of a home.

Each Prefect version has its own managed server (and Prefect home), each install its own warm
process: `status` shows this install's server and warm process first, then whatever else runs
under the same reviewflow home (other Prefect versions' servers, other installs' warm
processes); `stop` stops all of them, so nothing of reviewflow runs for that home afterwards.
While reviews run on them (`flows.local.reviews`), `stop` stops nothing; `stop --force` cancels
them first. What cannot be read or stopped is one line (ServerError), never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flows.local.api import drain_prefect
from flows.local.process import (
    LOG_FILE,
    STATE_FILE,
    HomeUnusable,
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
from flows.local.reviews import (
    RunningReview,
    cancel_reviews,
    running_reviews,
    wait_ended,
)
from flows.local.settings import managed_root, prefect_home, prefect_homes, prefect_version
from flows.local.warm.sockets import install_key
from flows.local.warm.state import WarmState, read_warm, running_warm, stop_warm, warm_records
from reviewflow.cancel import GRACE_S

CANCEL_WAIT_S = GRACE_S + 1.0  # a cancelled review ends within GRACE_S (its own watchdog)


@dataclass(frozen=True)
class ServerStatus:
    """What `reviewflow server status` shows."""

    home: Path
    state: ServerState | None
    running: bool
    warm: WarmState | None = None  # this install's warm review process (running or off)
    others: list[str] = field(default_factory=list)  # other versions' and installs' processes
    reviews: list[RunningReview] = field(default_factory=list)  # running on managed servers

    def render(self) -> str:
        log = self.home / LOG_FILE
        lines = [f"not running (Prefect home: {self.home})"]
        if self.running and self.state is not None:
            ui = self.state.url.removesuffix("/api")
            lines = [
                f"running: pid {self.state.pid}, Prefect {self.state.prefect_version}, "
                f"exits after {self.state.idle_minutes:g} idle minutes",
                f"open {ui} in a browser to see flow runs, task runs and artifacts",
                f"or: PREFECT_API_URL={self.state.url} {prefect_command()} flow-run ls",
            ]
        lines.append(self._warm_line())
        if self.running:
            lines += [f"Prefect home: {self.home}", f"log: {log}"]
        lines += [f"also running: {other}" for other in self.others]
        lines += [f"review running: {review.describe()}" for review in self.reviews]
        return "".join(f"{line}\n" for line in lines)

    def _warm_line(self) -> str:
        if self.warm is None:
            return "no warm process"
        if self.warm.off:
            return f"warm review process: off ({self.warm.off})"
        return f"warm review process: pid {self.warm.pid} (log: {self.warm.log})"


def server_status(home: Path) -> ServerStatus:
    """The managed server of the reviewflow home `home` for this install, and what else runs;
    ServerError when its home cannot be read (whether a server runs cannot be told)."""
    phome, install = prefect_home(home), install_key()
    failing = "cannot tell whether the local Prefect server runs"
    homes = _managed_homes(home, failing)
    problem = unreadable(phome)
    if problem is not None:
        raise ServerError(f"{failing}: {problem}")
    state = read_state(phome)
    running = state is not None and is_ours(state) and server_version(state.url) is not None
    warm = read_warm(phome, install)
    if warm is not None and not warm.off and warm not in running_warm(phome):
        warm = None
    others = []
    for other in homes:
        server = read_state(other)
        if other != phome and server is not None and is_ours(server):
            of = f" of Prefect {server.prefect_version}" if server.prefect_version else ""
            others.append(f"the server{of}, pid {server.pid} ({other})")  # no version: booting
        for process in running_warm(other):
            if (other, process.install) != (phome, install):
                others.append(f"a warm review process of {process.program}, pid {process.pid}")
    return ServerStatus(phome, state, running, warm, others, _running_reviews(homes))


def prefect_command() -> str:
    """How to run this install's Prefect CLI from a shell: `prefect` when that is the one on
    PATH, else the executable beside this interpreter (a virtualenv not activated), else the
    interpreter with `-m prefect`."""
    beside = Path(sys.executable).parent / "prefect"
    if not os.access(beside, os.X_OK):
        return f"{shlex.quote(sys.executable)} -m prefect"
    on_path = shutil.which("prefect")
    with contextlib.suppress(OSError):
        if on_path is not None and os.path.samefile(on_path, beside):
            return "prefect"
    return shlex.quote(str(beside))


class StopRefused(ServerError):
    """`server stop` without `--force` while reviews run on a managed server: nothing stopped."""


class StopFailed(ServerError):
    """`server stop` could not stop everything; `stopped` says what it did stop."""

    def __init__(self, message: str, stopped: list[str]) -> None:
        super().__init__(message)
        self.stopped = stopped


def stop_server(home: Path, *, force: bool = False) -> list[str]:
    """Stop every managed server and warm process of the reviewflow home `home` (every Prefect
    version, every install); one line for each that was running. Reviews running on them are
    refused (StopRefused, nothing stopped), or with `force` cancelled first (SIGTERM: they
    report themselves incomplete and exit 130) and waited for, a few seconds at most. What
    cannot be stopped (another user's process, files that cannot be changed) is StopFailed."""
    homes = _managed_homes(home, f"cannot stop what runs for {home}")
    reviews = _running_reviews(homes)
    if reviews and not force:
        raise StopRefused(refusal(reviews))
    stopped = _cancel(reviews)
    drain_prefect()
    failed: list[str] = []
    for phome in homes:
        problem = unreadable(phome)
        if problem is not None:
            failed.append(f"cannot stop what runs for {phome}: {problem}")
            continue
        _stop_warm(phome, stopped, failed)
        home_version = None if phome == managed_root(home) else phome.name  # one per version
        _stop_managed(phome, home_version, force, stopped, failed)
    if failed:
        raise StopFailed("; ".join(failed), stopped)
    return stopped


def refusal(reviews: list[RunningReview]) -> str:
    """Why `server stop` stops nothing: the reviews it would break, and `--force`."""
    many = len(reviews) > 1
    return (
        f"not stopping: {len(reviews) if many else 'a'} review{'s' if many else ''} "
        f"{'run' if many else 'runs'} on the local Prefect server: "
        f"{', '.join(review.describe() for review in reviews)}; wait for "
        f"{'them' if many else 'it'} to end, or cancel {'them' if many else 'it'} "
        "(reported incomplete) and stop with `reviewflow server stop --force`"
    )


def _managed_homes(home: Path, failing: str) -> list[Path]:
    """`prefect_homes(home)`; ServerError (`failing`: why) when their folder cannot be read."""
    root = managed_root(home)
    try:
        os.listdir(root)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ServerError(f"{failing}: {_why(exc, root)}") from None
    return prefect_homes(home)


def unreadable(phome: Path) -> str | None:
    """Why the managed Prefect home `phome` (or its server's record) cannot be read; None when
    it can, or is not there."""
    for path in (phome, phome / STATE_FILE):
        try:
            if path == phome:
                os.listdir(path)
            else:
                path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return _why(exc, path)
    return None


def _why(exc: BaseException, reading: Path | None = None) -> str:
    """One clause for what went wrong: a file that could not be read (`reading`) or changed,
    a lock that could not be taken, a process not ours to signal."""
    if isinstance(exc, HomeUnusable):
        return f"cannot open {exc.path}: {exc.reason}"
    if isinstance(exc, OSError):
        where, reason = exc.filename or reading, exc.strerror or str(exc)
        return f"cannot {'read' if reading else 'change'} {where}: {reason}"
    return str(exc)


def _running_reviews(homes: list[Path]) -> list[RunningReview]:
    found = []
    for phome in homes:
        try:
            found += running_reviews(phome)
        except OSError as exc:
            raise ServerError(
                f"cannot tell which reviews run on the local Prefect server: {_why(exc, phome)}"
            ) from None
    return sorted(found, key=lambda review: review.started_at)


def _cancel(reviews: list[RunningReview]) -> list[str]:
    """Cancel `reviews` and wait (a few seconds at most) for them to end; a line for each."""
    if not reviews:
        return []
    failed = cancel_reviews(reviews)
    if failed:
        raise ServerError(f"{'; '.join(failed)}: nothing stopped")
    left = wait_ended(reviews, CANCEL_WAIT_S)
    return [
        f"cancelled the review {review.describe()}"
        + (": it has not ended yet" if review in left else "")
        for review in reviews
    ]


def _stop_warm(phome: Path, stopped: list[str], failed: list[str]) -> None:
    for state in warm_records(phome):
        try:
            warm = stop_warm(phome, state.install)
        except (ServerError, OSError) as exc:
            failed.append(f"cannot stop the warm review process (pid {state.pid}): {_why(exc)}")
            continue
        if warm is not None:
            stopped.append(f"stopped the warm review process (pid {warm.pid})")


def _stop_managed(
    phome: Path, home_version: str | None, force: bool, stopped: list[str], failed: list[str]
) -> None:
    """Stop the server of `phome` (the Prefect home of `home_version`, None for the older
    shared one), under its lock; a review that registered meanwhile (it does so before it
    takes the lock) is cancelled with `force`, else the server is kept."""
    state = read_state(phome)
    if state is None:
        return
    name = f"the local Prefect server (pid {state.pid}) of {phome}"
    what = f"cannot stop {name}"
    try:
        with locked(phome):
            late = running_reviews(phome)
            if late and not force:
                failed.append(f"cannot stop {name}: {refusal(late)}")
                return
            failed += cancel_reviews(late)
            state = read_state(phome)
            if state is None:
                return
            running = is_ours(state)
            stop_process(state)
            if running:
                stopped.append(stopped_line(state, home_version))
            what = f"stopped {name}, but cannot remove its record"
            forget_state(phome, state.instance)
    except (ServerError, OSError) as exc:
        failed.append(f"{what}: {_why(exc)}")


def stopped_line(state: ServerState, home_version: str | None) -> str:
    """`stopped (pid N, Prefect 3.9.1)`; a server still booting has recorded no version yet:
    its Prefect home's version is named, and that it was still starting."""
    if state.prefect_version:
        return f"stopped (pid {state.pid}, Prefect {state.prefect_version})"
    if home_version:
        return f"stopped (pid {state.pid}, Prefect {home_version}, still starting)"
    return f"stopped (pid {state.pid}, a server still starting)"


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
