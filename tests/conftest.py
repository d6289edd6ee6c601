"""Suite-wide guards: no network beyond loopback, an isolated home, Git and environment."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Prefect reads these at import time; set them before any test module imports it.
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="reviewflow-prefect-"))
os.environ["PREFECT_SERVER_LOGGING_LEVEL"] = "CRITICAL"
# Python subprocesses of the tests (CLI runs, Prefect's test server) get the same network guard.
_GUARD_DIR = str(Path(__file__).parent / "netguard")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_GUARD_DIR, os.environ.get("PYTHONPATH", "")) if p
)

from reviewflow import cancel  # noqa: E402
from reviewflow.cancel import Canceller  # noqa: E402
from reviewflow.providers.registry import PoolRegistry  # noqa: E402
from tests.gitutil import GitRepo  # noqa: E402
from tests.netguard import netguard  # noqa: E402
from tests.wire_server import WireServer  # noqa: E402

_SCRUBBED = (
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "JENKINS_URL",
    "BITBUCKET_BUILD_NUMBER",
    "TF_BUILD",
    "SYSTEM_ACCESSTOKEN",
    "AZURE_DEVOPS_EXT_PAT",
    "REVIEWFLOW_AZURE_DEVOPS_TOKEN",
    "SYSTEM_COLLECTIONURI",
    "SYSTEM_PULLREQUEST_PULLREQUESTID",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "REVIEWFLOW_MODEL_PROTOCOL",
    "REVIEWFLOW_MODEL_NAME",
    "REVIEWFLOW_MODEL_ENDPOINT",
    "REVIEWFLOW_MODEL_TIMEOUT",
    "REVIEWFLOW_MODEL_API_KEY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    # cloud platforms (model.platform): a developer's own settings must not reach a test
    "REVIEWFLOW_MODEL_PLATFORM",
    "REVIEWFLOW_MODEL_REGION",
    "REVIEWFLOW_MODEL_PROJECT",
    "REVIEWFLOW_MODEL_DEPLOYMENT",
    "REVIEWFLOW_MODEL_API_VERSION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AZURE_OPENAI_ENDPOINT",
    "OPENAI_API_VERSION",
)


# Tests that start Prefect servers, workers or whole review processes: marked `slow`, so
# `pytest -m "not slow"` is the quick loop (about a minute); CI runs everything.
_SLOW_FIXTURES = {"prefect_harness", "_prefect_api"}
_SLOW_DIRS = ("server",)
_SLOW_MODULES = ("test_worker.py", "test_dask.py", "test_resume.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stress-slice", default=None, metavar="K/N",
        help="run only the stress tests whose ordinal i has i %% N == K (CI's rotation)",
    )  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mark_slow(items)
    _select_stress(config, items)
    _longest_first(items)


# The test files that take longest (per-file junit times, 2 cores, busiest first; measured for
# issue 39, bench/RESULTS.md), first: with `-n 3 --dist loadfile --no-loadscope-reorder` (the
# Makefile) no worker is left running a long file alone at the end. xdist's own reorder (files
# with the most tests first) had put the three tests of test_worker.py (~80 s) last.
_LONGEST = (
    "tests/server/test_warm.py",
    "tests/deploy/test_dask_stop.py",
    "tests/deploy/test_worker.py",
    "tests/server/test_local_server.py",
    "tests/server/test_stop_local.py",
    "tests/server/test_prepare.py",
    "tests/deploy/test_dask_cluster.py",
    "tests/publish/test_pull_requests.py",
    "tests/server/test_stop_reviews.py",
    "tests/deploy/test_dask.py",
    "tests/publish/test_reopened.py",
    "tests/server/test_stop_warm.py",
    "tests/server/test_early_start.py",
    "tests/deploy/test_release.py",
    "tests/cli/test_failures.py",
    "tests/quality/test_harness.py",
    "tests/quality/test_context_ablation.py",
)


def _longest_first(items: list[pytest.Item]) -> None:
    """Items of the `_LONGEST` files first, in that order; the rest as collected."""
    rank = {path: n for n, path in enumerate(_LONGEST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def _select_stress(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The stress matrix (`stress`: the cases of long matrices beyond a representative set,
    such as every signal at every point): left out unless a `-m` names it (`make
    test-stress`); `--stress-slice K/N` keeps every N-th one from K."""
    stress = [item for item in items if item.get_closest_marker("stress") is not None]
    chosen = config.getoption("--stress-slice")
    if "stress" not in config.option.markexpr:
        dropped = stress
    elif chosen is not None:
        k, n = (int(part) for part in chosen.split("/"))
        dropped = [item for i, item in enumerate(stress) if i % n != k]
        kept = [item.nodeid for item in stress if item not in dropped]
        config.stash[_STRESS_RAN] = kept
    else:
        dropped = []
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in dropped]


_STRESS_RAN = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Which stress tests a `--stress-slice` ran (CI's log names its slice)."""
    ran = config.stash.get(_STRESS_RAN, None)
    if ran is not None:
        chosen = config.getoption("--stress-slice")
        terminalreporter.write_line(f"stress slice {chosen}: {len(ran)} tests")
        for nodeid in ran:
            terminalreporter.write_line(f"  {nodeid}")


def _mark_slow(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path
        if (
            _SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
            or path.parent.name in _SLOW_DIRS
            or path.name in _SLOW_MODULES
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail any test that connects, sends or resolves names beyond loopback, even if the
    refusal was caught and swallowed somewhere below the test."""
    for name, method in netguard.guarded_methods().items():
        monkeypatch.setattr(socket.socket, name, method)
    monkeypatch.setattr(socket, "getaddrinfo", netguard.guarded_getaddrinfo())
    netguard.BLOCKED.clear()
    yield
    assert not netguard.BLOCKED, netguard.BLOCKED


@pytest.fixture(autouse=True)
def canceller(monkeypatch: pytest.MonkeyPatch) -> Canceller:
    """This process's cancellation state (`reviewflow.cancel`), new for each test, without a
    watchdog: a cancel a test causes (a hand-over's signal, say) ends with it."""
    fresh = Canceller(grace=None)
    monkeypatch.setattr(cancel, "CANCEL", fresh)
    return fresh


@pytest.fixture(autouse=True)
def _restored_environ() -> Iterator[None]:
    """The CLI exports Prefect settings into `os.environ` itself (not through monkeypatch):
    every test starts from, and leaves, the suite's own environment."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _isolated_env(
    _restored_environ: None,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A fresh reviewflow home and a global Git config that only names the test author."""
    for name in _SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("rfhome")
    monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[user]\n\tname = Test\n\temail = test@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture
def rf_home(_isolated_env: Path) -> Path:
    return _isolated_env


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[GitRepo]:
    """An empty, real Git repository in a temporary directory."""
    yield GitRepo.init(tmp_path / "repo")


@pytest.fixture(scope="session")
def prepared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reviewflow home whose managed Prefect server had its first start (database migrated,
    block types registered), once per session and shared by its xdist workers (the first makes
    it, under a lock): `copy_prepared` gives another home the same database, so a test's server
    starts cold, not first-ever (~10 s of migrations saved). Never written to after."""
    from flows.local.api import ensure_api

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's, above each worker's own
    home = root / "prepared"
    with open(root / "prepared.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / "prepared.done").exists():
            shutil.rmtree(home, ignore_errors=True)  # a worker that died making it
            env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
            with ensure_api(home, env, ci=True, reuse=False):  # the first start, then stopped
                pass
            (root / "prepared.done").touch()
    return home


def copy_prepared(template: Path, home: Path) -> None:
    """Give `home` the prepared database of `template` (see `prepared_home`)."""
    from flows.local.process import DATABASE_FILE
    from flows.local.settings import prefect_home
    from reviewflow.fsutil import private_dirs

    private_dirs(prefect_home(home))
    for part in prefect_home(template).glob(DATABASE_FILE + "*"):  # with any -wal, -shm
        shutil.copy2(part, prefect_home(home) / part.name)


@contextlib.contextmanager
def managed_server(template: Path, home: Path) -> Iterator[str]:
    """A managed Prefect server of its own in `home` (a copy of the prepared database): its
    API URL; stopped at the end."""
    from flows.local.api import ensure_api
    from flows.local.control import stop_server

    copy_prepared(template, home)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    target = ensure_api(home, env, ci=False, reuse=True)
    try:
        assert target.url is not None
        yield target.url
    finally:
        stop_server(home)


@pytest.fixture(scope="session")
def prefect_api_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reviewflow home of the shared test API's managed server (its database is there)."""
    return tmp_path_factory.mktemp("api")


@pytest.fixture(scope="session")
def _prefect_api(prepared_home: Path, prefect_api_home: Path) -> Iterator[str]:
    """One Prefect API for every flow-level test: a managed server, as a local review uses."""
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
        temporary_settings,
    )

    with (
        managed_server(prepared_home, prefect_api_home) as url,
        temporary_settings(updates={PREFECT_API_URL: url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
    ):
        yield url


@pytest.fixture
def prefect_harness(_prefect_api: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The shared test API, also as `PREFECT_API_URL` (a CLI review then starts no server)."""
    monkeypatch.setenv("PREFECT_API_URL", _prefect_api)
    return _prefect_api


@pytest.fixture
def prefect_tasks(prefect_harness: None) -> Iterator[None]:
    """The shared Prefect API, with task runs outside a flow allowed to log quietly."""
    from prefect.settings import PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW, temporary_settings

    with temporary_settings(updates={PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW: "ignore"}):
        yield


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A scripted model server on 127.0.0.1 speaking all three protocols."""
    with WireServer() as server:
        yield server


@pytest.fixture
def pools() -> Iterator[PoolRegistry]:
    """A flow run's provider pools, as `run_review` opens them: a registry active in the test's
    context (pools made in it join it, handles resolve in it), every pool closed at the end."""
    with PoolRegistry() as registry, registry.active():
        yield registry
