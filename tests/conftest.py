"""Suite-wide guards: no network beyond loopback, an isolated home, Git and environment."""

from __future__ import annotations

import ipaddress
import os
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

from tests.gitutil import GitRepo
from tests.wire_server import WireServer

_SCRUBBED = (
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "JENKINS_URL",
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
)


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths and the like never leave the machine
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class NetworkBlockedError(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that connects anywhere but loopback."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise NetworkBlockedError(f"test tried to connect to {address!r}")
        return real_connect(self, address)

    def guarded_ex(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise NetworkBlockedError(f"test tried to connect to {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_ex)


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
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
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for every flow-level test (starting one costs seconds)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with (
        prefect_test_harness(server_startup_timeout=120),
        temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
    ):
        yield


@pytest.fixture
def wire() -> Iterator[WireServer]:
    """A scripted model server on 127.0.0.1 speaking all three protocols."""
    with WireServer() as server:
        yield server
