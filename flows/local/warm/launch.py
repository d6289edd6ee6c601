"""Starting the warm review process for the next review (at the end of a review run in the CLI).

No Prefect import here: a review that starts one has imported Prefect, but this stays light.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from flows.local.process import ServerError, ServerState, inherited_env, locked
from flows.local.settings import TELEMETRY_OFF, prefect_home, prefect_version
from flows.local.warm.client import NOTE, off_message
from flows.local.warm.sockets import install_key, make_private_dir, path_problem, socket_path
from flows.local.warm.state import (
    WarmState,
    current,
    lock_name,
    log_path,
    prune_logs,
    read_warm,
    terminate,
    write_warm,
)
from reviewflow.fsutil import PRIVATE_UMASK

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]
_SECRET_WORDS = ("KEY", "AUTH", "PASSWORD", "SECRET", "TOKEN")  # never in the warm process


def start_warm(home: Path, env: Mapping[str, str], server: ServerState, program: str) -> None:
    """Start a warm process for the next review (detached; this CLI does not wait for it),
    unless a current one exists, another CLI is starting one right now, or the warm path is off
    for this install (a socket it could not listen on). `program` is the module that runs it
    (`flows.local.warm.main.main` with the CLI to run per review). It only saves the next
    review time: a failure to start it (OSError, ServerError) costs nothing."""
    with contextlib.suppress(OSError, ServerError):
        _start(prefect_home(home), env, server, program)


def _start(phome: Path, env: Mapping[str, str], server: ServerState, program: str) -> None:
    install = install_key()
    with locked(phome, lock_name(install), wait=False) as mine:
        old = read_warm(phome, install)
        if not mine or current(old, server):
            return
        sock = socket_path(env, phome, install)
        if old is not None and old.off and old.socket == str(sock):
            return  # off until the socket's path changes or `reviewflow server stop`
        if old is not None:
            terminate(phome, old)
        problem = make_private_dir(sock.parent)
        if problem is not None:  # every time: the user can fix it
            sys.stderr.write(NOTE.format(what=f"no warm review process: {problem}"))
            return
        state = _new_state(phome, server, install, sock)
        problem = path_problem(sock)
        if problem is not None:  # once: off for this socket path
            write_warm(phome, replace(state, off=problem, noted=True))
            sys.stderr.write(NOTE.format(what=off_message(problem)))
            return
        pid = _spawn(state, env, server, program, phome)
        write_warm(phome, replace(state, pid=pid))


def _new_state(phome: Path, server: ServerState, install: str, sock: Path) -> WarmState:
    instance = f"reviewflow-warm-{uuid.uuid4().hex}"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    log = log_path(phome, install, stamp, instance)
    return WarmState(
        0, instance, server.instance, prefect_version(), install,
        f"{sys.executable} (code in {_PACKAGE_ROOT})", str(sock), str(log), time.time(),
    )  # fmt: skip


def _spawn(
    state: WarmState, env: Mapping[str, str], server: ServerState, program: str, phome: Path
) -> int:
    args = [
        sys.executable, "-m", program, "--home", str(phome), "--instance", state.instance,
        "--server-instance", server.instance, "--idle-seconds", str(server.idle_minutes * 60),
        "--install", state.install, "--socket", state.socket,
    ]  # fmt: skip
    log = Path(state.log)
    log.parent.mkdir(mode=0o700, exist_ok=True)
    prune_logs(phome)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as out:  # one log per warm process, kept after it ends
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=_PACKAGE_ROOT,
            env=warm_env(env, phome, server.url),
            umask=PRIVATE_UMASK,  # what it and its review children create: the user's alone
        )
    return process.pid


def warm_env(env: Mapping[str, str], phome: Path, url: str) -> dict[str, str]:
    """The warm process's environment: a few inherited basics and the Prefect variables of the
    CLI that starts it, never a secret one. The reviews it forks most likely have the same, and
    then keep the Prefect settings it read (`flows.local.warm.prep`)."""
    out = inherited_env(env)
    for name, value in env.items():
        upper = name.upper()
        if upper.startswith("PREFECT_") and not any(word in upper for word in _SECRET_WORDS):
            out[name] = value
    out.update(PREFECT_HOME=str(phome), PREFECT_API_URL=url, **TELEMETRY_OFF)
    return out
