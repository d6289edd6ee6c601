"""`reviewflow server prepare`: a home's first start done ahead (the Docker image runs it at
build time), so the first review there pays a cold start, never a first one.

One prepared home serves the module; the tests run in file order.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from flows.local.api import PREPARING_NOTE, ensure_api
from flows.local.control import stop_server
from flows.local.process import DATABASE_FILE, STATE_FILE, read_state, server_env, server_version
from flows.local.settings import prefect_home, prefect_version
from tests.conftest import copy_prepared
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.server.conftest import server_pids
from tests.wire_server import WireServer

Run = subprocess.CompletedProcess[str]


def _cli(home: Path, *args: str, **env: str) -> Run:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        env={**os.environ, "REVIEWFLOW_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _contents(home: Path) -> tuple[object, ...]:
    """What a first start leaves in the database: the migration, block types and schemas."""
    with sqlite3.connect(prefect_home(home) / DATABASE_FILE) as db:
        return tuple(
            db.execute(query).fetchall()
            for query in (
                "SELECT version_num FROM alembic_version",
                "SELECT slug FROM block_type ORDER BY slug",
                "SELECT checksum FROM block_schema ORDER BY checksum",
            )
        )


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    home = tmp_path_factory.mktemp("prepared")
    return home, _cli(home, "server", "prepare")


def test_prepare_does_a_first_start_and_leaves_no_process(
    prepared: tuple[Path, Run], prepared_home: Path, tmp_path: Path
) -> None:
    home, run = prepared
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.startswith(f"prepared {prefect_home(home)} in ")
    assert run.stdout.endswith("no process left running\n")
    assert server_pids(home) == []
    assert not (prefect_home(home) / STATE_FILE).exists()
    # Exactly what a home's first start by a review leaves (`prepared_home` is one).
    versions, block_types, schemas = _contents(home)
    assert versions and block_types and schemas
    copy_prepared(prepared_home, tmp_path)  # read a copy: the session's is shared, never opened
    assert _contents(home) == _contents(tmp_path)


def test_the_first_review_of_a_prepared_home_does_not_migrate(
    prepared: tuple[Path, Run], tmp_path: Path
) -> None:
    home, _ = prepared
    phome = prefect_home(home)
    start = server_env(os.environ, phome, "http://127.0.0.1:9/api")
    assert start["PREFECT_SERVER_REGISTER_BLOCKS_ON_START"] == "false"  # a later start's
    repo = GitRepo.init(tmp_path / "repo")
    repo.write("app.py", "def f():\n    return 1\n")
    repo.commit("base")
    repo.write("app.py", "def f():\n    return 2\n")
    repo.commit("change")
    with WireServer() as wire:
        wire.respond("openai", ScriptedReviewer({}))
        review = _cli(
            home,
            *("review", "--repo", str(repo.root), "--commit", "HEAD", "--no-server-reuse"),
            REVIEWFLOW_MODEL_NAME="test-model",
            REVIEWFLOW_MODEL_ENDPOINT=wire.base_url("openai"),
            REVIEWFLOW_MODEL_API_KEY="sk-prepared-test",
        )
        assert wire.requests("openai")
    assert review.returncode == 0, review.stderr
    assert PREPARING_NOTE.strip() not in review.stderr
    assert server_pids(home) == []


def test_prepare_twice_is_harmless(prepared: tuple[Path, Run]) -> None:
    home, _ = prepared
    before = _contents(home)
    again = _cli(home, "server", "prepare")
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout.startswith("prepared ")
    assert _contents(home) == before
    assert server_pids(home) == []


def test_a_running_server_is_left_alone(prepared: tuple[Path, Run]) -> None:
    home, _ = prepared
    target = ensure_api(home, os.environ, ci=False, reuse=True)
    assert target.state is not None
    try:
        run = _cli(home, "server", "prepare")
        assert (run.returncode, run.stderr) == (0, "")
        assert f"(pid {target.state.pid}): its home is prepared; left as it is" in run.stdout
        assert server_version(target.state.url) == prefect_version()
        assert read_state(prefect_home(home)) == target.state
        assert server_pids(home) == [target.state.pid]
    finally:
        stop_server(home)


def test_a_home_it_cannot_use_fails_in_one_line(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    run = _cli(not_a_dir, "server", "prepare")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("reviewflow: error: cannot use ")
    assert run.stderr.count("\n") == 1
    broken = tmp_path / "broken"
    prefect_home(broken).mkdir(parents=True)
    (prefect_home(broken) / DATABASE_FILE).write_text("not a database")
    run = _cli(broken, "server", "prepare")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("reviewflow: error: the local Prefect server exited while")
    assert run.stderr.count("\n") == 1
    assert server_pids(broken) == []
