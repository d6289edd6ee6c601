"""The Prefect API a local run uses: the user's own, or the server reviewflow manages.

`ensure_api` is called by the review command before it imports Prefect: it returns the API
to use — the user's own `PREFECT_API_URL`, or a server of our own under the reviewflow home,
started on first use and kept alive for `idle_minutes` — and has `preload` import Prefect
with the run's environment, beside a cold server's boot.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from flows.local.process import (
    DATABASE_FILE,
    LOG_FILE,
    LOOPBACK,
    Booting,
    ServerError,
    ServerState,
    forget_state,
    inherited_env,
    is_ours,
    is_serving,
    locked,
    read_state,
    spawn,
    stop_process,
    wait_ready,
    write_state,
)
from flows.local.reviews import running_reviews
from flows.local.settings import DEFAULT_IDLE_MINUTES, prefect_home, prefect_version
from reviewflow import cancel

T = TypeVar("T")
Preload = Callable[[Mapping[str, str]], object]
_DRAIN_S = 10.0
_HURRIED_DRAIN_S = 1.0  # a cancelled run's: it must end within seconds
_HURRIED_STOP_S = 1.0
PREPARING_NOTE = "reviewflow: preparing the local Prefect database (first run only)\n"
# The managed server's Prefect version is checked here (`is_serving`, `wait_ready`: the very
# version installed, stricter than Prefect's own check), so a flow run's client does not ask
# /admin/version again (once per process: a first cold run's ~0.06 s, a warm child's few ms).
_CHECKED = {"PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": "false"}


@dataclass
class ApiTarget:
    """The Prefect API a run uses. `env` (the managed server's `PREFECT_API_URL` and
    `PREFECT_HOME`; empty for the user's own API) must be exported before Prefect is imported."""

    url: str | None  # PREFECT_API_URL to set; None when the user's own is used
    env: dict[str, str]
    home: Path | None = None  # the managed Prefect home (None: not managed)
    inherited: dict[str, str] = field(default_factory=dict)  # what a restarted server gets
    state: ServerState | None = None
    stop_at_end: bool = False
    forced: int | None = None  # `stopped_if_forced`'s key while the server is stopped at the end

    def close(self) -> None:
        """Stop the server if this run started it for itself (CI, `--no-server-reuse`); a
        cancelled run only asks it to stop (it must end within seconds)."""
        if self.stop_at_end and self.home is not None and self.state is not None:
            hurry = cancel.requested()
            drain_prefect(_HURRIED_DRAIN_S if hurry else _DRAIN_S)
            with locked(self.home):
                if hurry:
                    ask_to_stop(self.home, self.state)
                else:
                    stop_process(self.state)
                    forget_state(self.home, self.state.instance)
            self.stop_at_end = False
        if self.forced is not None:
            cancel.unlisten(self.forced)

    def __enter__(self) -> ApiTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def drain_prefect(timeout: float = _DRAIN_S) -> None:
    """Send what this process's Prefect event and log workers still hold (the last task runs'
    states, the flow run's last lines) before the server stops: at exit they would find it
    stopped and print "Error logging to API"."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (EventsWorker, APILogWorker):
        worker.drain_all(timeout=timeout)


def stopped_if_forced(state: ServerState) -> int:
    """A server this run stops at its end is sent SIGTERM should the process be ended at once
    (a second signal, the watchdog): it must not outlive a CI run. The key for `unlisten`."""
    return cancel.at_forced_exit(lambda: _signal_stop(state))


def _signal_stop(state: ServerState) -> None:
    with contextlib.suppress(ServerError):  # not ours to signal: nothing to do at a forced exit
        stop_process(state, grace=0, kill=False)


def ask_to_stop(home: Path, state: ServerState) -> None:
    """Stop a server this cancelled run started, without waiting long: SIGTERM (one still
    migrating its database finishes that first, so the database stays whole). Its record is
    kept until it is gone: a next run waits for it before it reuses the database."""
    stop_process(state, grace=_HURRIED_STOP_S, kill=False)
    if not is_ours(state):
        forget_state(home, state.instance)


def ensure_api(
    home: Path,
    env: Mapping[str, str],
    *,
    ci: bool,
    reuse: bool,
    idle_minutes: float = DEFAULT_IDLE_MINUTES,
    host: str = LOOPBACK,
    preload: Preload | None = None,
    early: EarlyStart | None = None,
) -> ApiTarget:
    """The API for one CLI run; starts the managed server if needed (or waits for the one
    `early` started), listening on `host` (`prefect.server_host`: a server recorded on another
    address is replaced, as a stale one is).

    `preload(target.env)` runs once the URL is known — on a cold start in a thread, while the
    server boots — so the caller can export the env and import Prefect there. The process's
    final garbage collection is skipped at exit (`gc.freeze`), which saves ~0.9 s.
    """
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    preloader = _Preloader(preload)
    if env.get("PREFECT_API_URL"):
        target = ApiTarget(None, {})
    else:
        target = ApiTarget("", {}, prefect_home(home), inherited_env(env))
        keep = reuse and not ci
        try:
            started = _ensure_server(
                target, env, idle_minutes, preloader.begin, early, keep=keep, host=host
            )
        except Exception:  # a failure: the interpreter's exit must not cut Prefect's import
            preloader.settle()  # short. A cancel is not waited for: it exits without that end
            raise
        target.stop_at_end = started and not keep
    try:
        preloader.finish(target.env)  # a cancel while Prefect's import ends: not yet a target
    except BaseException:
        if target.stop_at_end and target.home is not None and target.state is not None:
            with locked(target.home):
                ask_to_stop(target.home, target.state)
        raise
    return target


def _client_env(target: ApiTarget, state: ServerState) -> None:
    target.state, target.url = state, state.url
    assert target.home is not None
    target.env.update(PREFECT_API_URL=state.url, PREFECT_HOME=str(target.home), **_CHECKED)


def _ensure_server(
    target: ApiTarget,
    env: Mapping[str, str],
    idle_minutes: float,
    on_url: Preload | None = None,
    early: EarlyStart | None = None,
    *,
    keep: bool = True,
    host: str = LOOPBACK,
) -> bool:
    """Reuse the recorded server if it is ours and current, else replace it (under the lock);
    True when a server was started (here, or by `early`, whose lock is held until it answers).
    `on_url(target.env)` is called as soon as a new server's URL is known, before it answers.
    A cancel meanwhile leaves a server that is `keep` to boot (the next run finds it), else
    asks it to stop."""
    assert target.home is not None
    home, version = target.home, prefect_version()
    if early is not None and early.booting.state.host != host:  # on loopback: replaced below
        early.abandon(keep=True)
        early = None
    with early.lock if early is not None else locked(home):
        if early is not None:
            early.taken, booting = True, early.booting
        else:
            old = read_state(home)
            if old is not None and old.host != host:
                _not_under_reviews(home, old, host)
            reused = _reusable(home, old, version) if old is None or old.host == host else None
            if reused is not None:
                _client_env(target, reused)
                return False
            booting = _respawn(home, env, idle_minutes, old, host)
        _client_env(target, booting.state)
        if not keep:
            target.forced = stopped_if_forced(booting.state)
        if on_url is not None:
            on_url(target.env)
        try:
            version = wait_ready(booting)
        except KeyboardInterrupt:
            if not keep:
                ask_to_stop(home, booting.state)
            raise
        except BaseException:
            stop_process(booting.state)
            forget_state(home, booting.state.instance)
            raise
        # The run's own idle time: the server reads it from here (an early start used the default).
        state = replace(booting.state, prefect_version=version, idle_minutes=idle_minutes)
        write_state(home, state)
        _client_env(target, state)
        return True


def _reusable(home: Path, old: ServerState | None, version: str) -> ServerState | None:
    """The recorded server if it serves `version`; or the one a cancelled run left booting
    (it never answered: no version recorded), once it answers: waited for as a first start
    is, through its migrations, which replacing it would cut short."""
    if old is None:
        return None
    if is_serving(old, version):
        return old
    if old.prefect_version or not is_ours(old):
        return None
    try:
        answered = wait_ready(Booting(None, old, home / LOG_FILE))
    except ServerError:  # it ended (asked to stop by its run), or never answered
        return None
    if answered != version:
        return None
    state = replace(old, prefect_version=answered)
    write_state(home, state)
    return state


def _not_under_reviews(home: Path, old: ServerState, host: str) -> None:
    """ServerError when the server `old`, on another address than `host`, is alive with reviews
    running on it: replacing it would cut them off."""
    reviews = running_reviews(home) if is_ours(old) else []
    if reviews:
        many = len(reviews) > 1
        raise ServerError(
            f"the local Prefect server listens on {old.host}, where "
            f"{len(reviews) if many else 'a'} review{'s' if many else ''} "
            f"{'run' if many else 'runs'}: wait for {'them' if many else 'it'} to end before "
            f"a review with the server on {host} (--server-host, prefect.server_host)"
        )


def _respawn(
    home: Path,
    env: Mapping[str, str],
    idle_minutes: float,
    old: ServerState | None,
    host: str = LOOPBACK,
) -> Booting:
    """Replace a stale recorded server (if any) by a new one on `host`, booting; the lock is
    held (the old one's port is asked for again on the same address only)."""
    if old is not None:
        stop_process(old)  # a stale server: gone before its database is reused
        forget_state(home, old.instance)
    if not (home / DATABASE_FILE).exists():
        sys.stderr.write(PREPARING_NOTE)
    port = old.port if old is not None and old.host == host else 0
    booting = spawn(home, env, idle_minutes, port, host=host)
    write_state(home, booting.state)  # found and replaced if this CLI dies during the boot
    return booting


@dataclass
class EarlyStart:
    """A server spawned before the CLI's own imports (`begin_server`); the lock taken then is
    held until `ensure_api` has waited for it, so no other CLI takes it for a stale one."""

    booting: Booting
    lock: contextlib.ExitStack
    taken: bool = False  # `ensure_api` waited for it: the server is its run's from then on

    def abandon(self, *, keep: bool) -> None:
        """The command ended before `ensure_api` took the server (a cancel, an error in its
        input): a server the run would not have kept (CI, `--no-server-reuse`) is asked to
        stop; a reusable one is left to boot, for the next run. The lock is released."""
        if not self.taken and not keep:
            with contextlib.suppress(OSError):
                ask_to_stop(self.booting.log.parent, self.booting.state)  # the log is in its home
        self.lock.close()


def begin_server(home: Path, env: Mapping[str, str]) -> EarlyStart | None:
    """For a review about to run on the managed server: spawn it now when none serves, so it
    boots while the CLI imports, reads its config and the change (~0.3-0.5 s here), at the
    default idle time (`ensure_api` then records the run's own). Not on a home's first start
    (its note and migrations stay after the CLI's checks), nor beside a server still booting
    (`ensure_api` waits for it), nor when the home is unusable: `ensure_api` says why."""
    phome = prefect_home(home)
    if not (phome / DATABASE_FILE).exists():
        return None
    lock = contextlib.ExitStack()
    try:
        lock.enter_context(locked(phome))
        old = read_state(phome)
        left_booting = old is not None and not old.prefect_version and is_ours(old)
        if not left_booting and (old is None or not is_serving(old, prefect_version())):
            return EarlyStart(_respawn(phome, env, DEFAULT_IDLE_MINUTES, old), lock)
    except (ServerError, OSError):
        pass
    lock.close()
    return None


class _Preloader:
    """Runs `preload` once: in a thread beside a cold server's boot (`begin`), else inline
    (`finish`); a failure in the thread is raised by `finish`."""

    def __init__(self, preload: Preload | None) -> None:
        self.preload = preload
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def begin(self, env: Mapping[str, str]) -> None:
        self.thread = threading.Thread(target=self._run, args=(env,), daemon=True)
        self.thread.start()

    def _run(self, env: Mapping[str, str]) -> None:
        try:
            if self.preload is not None:
                self.preload(env)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller by finish()
            self.error = exc

    def finish(self, env: Mapping[str, str]) -> None:
        if self.thread is None:
            self._run(env)
        else:
            self.thread.join()
        if self.error is not None:
            raise self.error

    def settle(self) -> None:
        """Wait for the thread, if any (the run failed): an interpreter that exits while it
        imports Prefect can abort (`Fatal Python error: Aborted`, exit 134)."""
        if self.thread is not None:
            self.thread.join()


def run_with_server(target: ApiTarget, call: Callable[[], T]) -> T:
    """Run `call` (a flow run); if the managed server died before it, restart it and retry once."""
    import httpx

    try:
        return call()
    except (RuntimeError, OSError, httpx.TransportError):
        if target.state is None or is_ours(target.state):
            raise
    old_url = target.url
    revive(target)
    if target.url == old_url:
        return call()
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: target.url}):
        return call()


def revive(target: ApiTarget) -> None:
    """Start the managed server again (same port when free) after it died under a run."""
    if target.home is None or target.state is None:
        return
    stop_at_end = target.stop_at_end
    state = target.state
    started = _ensure_server(target, target.inherited, state.idle_minutes, host=state.host)
    target.stop_at_end = stop_at_end or started
