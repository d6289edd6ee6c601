"""A review's entry point starts the managed server before the CLI's own imports
(`begin_server`), and `ensure_api` waits for that server instead of starting another."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from flows.cli.entry import needs_server
from flows.local.api import begin_server, ensure_api
from flows.local.control import stop_server
from flows.local.process import read_state
from flows.local.settings import DEFAULT_IDLE_MINUTES, prefect_home
from tests.conftest import copy_prepared
from tests.server.conftest import server_pids
from tests.server.test_local_server import _gone


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, prepared_home: Path) -> Path:
    home = tmp_path_factory.mktemp("early")
    copy_prepared(prepared_home, home)  # as `server prepare` leaves it
    return home


def test_only_a_review_on_the_managed_server_starts_it_early() -> None:
    review = ["review", "--commit", "HEAD"]
    assert needs_server(review, {}) and needs_server([*review, "--no-warm"], {"CI": "true"})
    assert not needs_server([*review, "--preview"], {})
    assert not needs_server([*review, "--help"], {})
    assert not needs_server(review, {"PREFECT_API_URL": "http://127.0.0.1:4200/api"})
    assert not needs_server(["server", "status"], {})


def test_not_on_a_first_start_nor_beside_a_serving_server(home: Path, tmp_path: Path) -> None:
    assert begin_server(tmp_path, os.environ) is None  # no database: the note and migrations
    assert not prefect_home(tmp_path).joinpath("server.json").exists()
    with ensure_api(home, os.environ, ci=True, reuse=False):
        assert begin_server(home, os.environ) is None
    assert server_pids(home) == []


def test_ensure_api_waits_for_the_early_server_and_records_the_runs_idle_time(
    home: Path,
) -> None:
    early = begin_server(home, os.environ)
    assert early is not None
    state = read_state(prefect_home(home))
    assert state is not None and state.pid == early.booting.state.pid
    assert state.idle_minutes == DEFAULT_IDLE_MINUTES
    target = ensure_api(home, os.environ, ci=False, reuse=True, idle_minutes=0.05, early=early)
    assert target.state is not None and target.state.pid == early.booting.state.pid
    assert not target.stop_at_end
    assert server_pids(home) == [target.state.pid]
    again = ensure_api(home, os.environ, ci=False, reuse=True)  # the lock was let go
    assert again.state is not None and again.state.pid == target.state.pid
    recorded = read_state(prefect_home(home))
    assert recorded is not None and recorded.idle_minutes == 0.05
    started = time.monotonic()
    assert _gone(target.state.pid, within=60.0)  # idle for 3 s, not the default hour
    assert time.monotonic() - started < 60.0
    stop_server(home)


def test_a_run_that_must_not_keep_the_server_stops_the_one_started_early(home: Path) -> None:
    early = begin_server(home, os.environ)
    assert early is not None
    with ensure_api(home, os.environ, ci=False, reuse=False, early=early) as target:
        assert target.stop_at_end
        pid = early.booting.state.pid
    assert _gone(pid, within=5.0)
    assert server_pids(home) == []
