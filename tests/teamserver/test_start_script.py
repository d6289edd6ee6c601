"""deployments/server/start.sh refuses a bad start in one line, exit 2, before starting
anything (the lines docs/troubleshooting.md quotes), and its environment wins over server.env.
Fast: no server starts (a stand-in `prefect` records what it was asked)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.teamserver.services import START

DB = "postgresql+asyncpg://prefect@127.0.0.1:5432/prefect"


def _start(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    recorder = tmp_path / "prefect"
    shown = ["$*", "$PREFECT_REDIS_MESSAGING_URL", "$PREFECT_SERVER_DOCKET_URL"]
    shown += ["$PREFECT_MESSAGING_BROKER", "$PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE"]
    shown += ["$PREFECT_API_URL"]
    recorder.write_text('#!/bin/sh\nprintf "%s\\n" ' + " ".join(f'"{v}"' for v in shown) + "\n")
    recorder.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "REVIEWFLOW_"))}
    return subprocess.run(
        ["sh", str(START), *args], env={**base, "PREFECT": str(recorder), **env},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({}, "start.sh: error: PREFECT_API_DATABASE_CONNECTION_URL is not set "
         "(postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DATABASE)"),
        ({"PREFECT_API_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:///x.db"},
         "start.sh: error: PREFECT_API_DATABASE_CONNECTION_URL must start with "
         "postgresql+asyncpg:// (the team server runs on PostgreSQL)"),
        ({"PREFECT_API_DATABASE_CONNECTION_URL": DB, "REVIEWFLOW_REDIS_URL": "127.0.0.1:6379"},
         "start.sh: error: REVIEWFLOW_REDIS_URL must be redis://HOST:PORT or rediss://HOST:PORT, "
         "not '127.0.0.1:6379'"),
    ],
)  # fmt: skip
def test_a_bad_start_is_one_line_and_exit_2(tmp_path: Path, env: dict[str, str], line: str) -> None:
    done = _start(tmp_path, "api", **env)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


def test_an_unknown_part_is_refused(tmp_path: Path) -> None:
    done = _start(tmp_path, "worker", PREFECT_API_DATABASE_CONNECTION_URL=DB)
    assert done.returncode == 2
    assert done.stderr == (
        "start.sh: error: unknown part 'worker' "
        "(accepted: api, services, setup, or nothing for both)\n"
    )


def test_the_api_runs_with_server_env_and_the_environment_wins(tmp_path: Path) -> None:
    done = _start(
        tmp_path, "api", PREFECT_API_DATABASE_CONNECTION_URL=DB,
        REVIEWFLOW_REDIS_URL="redis://10.0.0.7:6380/", PREFECT_API_URL="http://elsewhere/api",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "server start --no-services --host 0.0.0.0 --port 4200",  # server.env's port
        "redis://10.0.0.7:6380/0",
        "redis://10.0.0.7:6380/1",
        "prefect_redis.messaging",
        "prefect_redis.lease_storage",
        "",  # a profile's API URL never leaks into the server
    ]
    services = _start(tmp_path, "services", PREFECT_API_DATABASE_CONNECTION_URL=DB)
    assert services.stdout.splitlines()[:2] == ["server services start", "redis://127.0.0.1:6379/0"]


def test_setup_runs_the_automation_script_against_this_machines_api(tmp_path: Path) -> None:
    python = tmp_path / "python"  # a stand-in: what it was asked, and with which API and window
    shown = '"$1" "$PREFECT_API_URL" "$REVIEWFLOW_HEARTBEAT_WITHIN"'
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" {shown}\n')
    python.chmod(0o755)
    done = _start(tmp_path, "setup", PREFECT_API_DATABASE_CONNECTION_URL=DB, PYTHON=str(python))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        str(START.parent / "crash_silent_runs.py"),
        "http://127.0.0.1:4200/api",  # it listens on 0.0.0.0: reached on loopback
        "90",  # server.env's window
    ]
    elsewhere = _start(
        tmp_path, "setup", PREFECT_API_DATABASE_CONNECTION_URL=DB, PYTHON=str(python),
        REVIEWFLOW_SETUP_API_URL="http://api:4200/api", REVIEWFLOW_HEARTBEAT_WITHIN="120",
    )  # fmt: skip
    assert elsewhere.stdout.splitlines()[1:] == ["http://api:4200/api", "120"]


@pytest.mark.parametrize("within", ["30", "ninety", ""])
def test_a_bad_heartbeat_window_is_one_line_and_exit_2(tmp_path: Path, within: str) -> None:
    done = _start(
        tmp_path, "setup", PREFECT_API_DATABASE_CONNECTION_URL=DB,
        PYTHON=sys.executable, REVIEWFLOW_HEARTBEAT_WITHIN=within,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "crash_silent_runs: error: REVIEWFLOW_HEARTBEAT_WITHIN must be whole seconds, at least 60 "
        f"(two heartbeats at Prefect's shortest, 30 s), not '{within}'\n"
    )
