"""`server status` and `server stop` where they cannot do their work: a home they cannot read,
a lock or record they cannot change, a server they may not signal. One line, exit 2, and what
could not be stopped keeps running.

These tests run as root here, and root reads and writes whatever a mode forbids: a file that
cannot be changed is made immutable (`chattr +i`) as root, read-only otherwise; a process of
another user (os.kill fails with EPERM) cannot be had as root, so it is simulated at the one
call that signals a managed process (`flows.local.process._kill`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.local import process
from flows.local.control import prefect_command
from flows.local.process import LOCK_FILE, STATE_FILE, ServerState, is_ours, read_state
from flows.local.reviews import ReviewRecord, process_start, reviews_dir
from flows.local.settings import prefect_home, prefect_version
from tests.conftest import managed_server

ROOT = os.geteuid() == 0
DENIED = "Operation not permitted" if ROOT else "Permission denied"


@contextlib.contextmanager
def unchangeable(path: Path) -> Iterator[None]:
    """`path` cannot be written, nor (a folder) have entries added or removed."""
    if ROOT:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("chattr +i is not available here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        return
    mode = path.stat().st_mode
    path.chmod(0o500 if path.is_dir() else 0o400)
    try:
        yield
    finally:
        path.chmod(mode)


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, (out, err)
    return err.removeprefix("reviewflow: error: ").removesuffix("\n")


def test_a_home_that_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.write_text("")
    monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
    assert main(["server", "status"]) == 2
    assert _error(capsys) == (
        "cannot tell whether the local Prefect server runs: "
        f"cannot read {home}/prefect: Not a directory"
    )
    assert main(["server", "stop"]) == 2
    assert (
        _error(capsys)
        == f"cannot stop what runs for {home}: cannot read {home}/prefect: Not a directory"
    )


def test_a_record_that_cannot_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    phome = prefect_home(tmp_path)
    (phome / STATE_FILE).mkdir(parents=True)
    monkeypatch.setenv("REVIEWFLOW_HOME", str(tmp_path))
    assert main(["server", "status"]) == 2
    assert _error(capsys) == (
        "cannot tell whether the local Prefect server runs: "
        f"cannot read {phome / STATE_FILE}: Is a directory"
    )
    assert main(["server", "stop"]) == 2
    assert _error(capsys) == (
        f"cannot stop what runs for {phome}: cannot read {phome / STATE_FILE}: Is a directory"
    )


@pytest.mark.skipif(ROOT, reason="root reads a folder whatever its mode")
def test_a_home_of_another_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    phome = prefect_home(tmp_path)
    phome.mkdir(parents=True)
    monkeypatch.setenv("REVIEWFLOW_HOME", str(tmp_path))
    phome.chmod(0)
    try:
        assert main(["server", "status"]) == 2
        assert _error(capsys).endswith(f"cannot read {phome}: Permission denied")
    finally:
        phome.chmod(0o700)


@pytest.fixture(scope="module")
def _running(prepared_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The home of a managed server the tests of `server` share: each leaves it running."""
    home = tmp_path_factory.mktemp("stop-failures") / "home"
    with managed_server(prepared_home, home):
        yield home


@pytest.fixture
def server(_running: Path, monkeypatch: pytest.MonkeyPatch) -> ServerState:
    """The module's managed server, running; `REVIEWFLOW_HOME` is its home."""
    monkeypatch.setenv("REVIEWFLOW_HOME", str(_running))
    state = read_state(prefect_home(_running))
    assert state is not None and is_ours(state)
    return state


@pytest.fixture
def own_server(
    prepared_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ServerState]:
    """A managed server of its own (for a test that stops it); `REVIEWFLOW_HOME` is its home."""
    home = tmp_path / "home"
    with managed_server(prepared_home, home):
        monkeypatch.setenv("REVIEWFLOW_HOME", str(home))
        state = read_state(prefect_home(home))
        assert state is not None
        yield state


def test_status_names_a_prefect_cli_that_works(
    server: ServerState,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`prefect` is named only when the one on PATH is this install's; else the one beside this
    interpreter (a virtualenv not activated), else the interpreter's `-m prefect`. The line,
    run by a shell without the virtualenv on PATH, lists the flow runs."""
    beside = Path(sys.executable).parent / "prefect"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert main(["server", "status"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("or: ")]
    assert line == f"or: PREFECT_API_URL={server.url} {prefect_command()} flow-run ls"
    if beside.exists():
        assert prefect_command() == shlex.quote(str(beside))
    else:
        assert prefect_command() == f"{shlex.quote(sys.executable)} -m prefect"
    shell_env = {"PATH": "/usr/bin:/bin", "PREFECT_HOME": str(tmp_path / "ph"), "DO_NOT_TRACK": "1"}
    listed = subprocess.run(
        ["sh", "-c", line.removeprefix("or: ")], capture_output=True, text=True, timeout=120,
        env=shell_env, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    if beside.exists():
        monkeypatch.setenv("PATH", f"{beside.parent}:/usr/bin:/bin")
        assert prefect_command() == "prefect"


def test_a_server_of_another_user_is_not_stopped(
    server: ServerState, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """os.kill fails with EPERM (simulated: see the module)."""

    def not_permitted(pid: int, sig: int) -> None:
        raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))

    phome = prefect_home(Path(os.environ["REVIEWFLOW_HOME"]))
    with monkeypatch.context() as patch:
        patch.setattr(process, "_kill", not_permitted)
        assert main(["server", "stop"]) == 2
    assert _error(capsys) == (
        f"cannot stop the local Prefect server (pid {server.pid}) of {phome}: "
        f"not permitted to signal pid {server.pid} (another user's process?)"
    )
    assert is_ours(server) and read_state(phome) == server


def test_a_lock_that_cannot_be_opened(
    server: ServerState, capsys: pytest.CaptureFixture[str]
) -> None:
    phome = prefect_home(Path(os.environ["REVIEWFLOW_HOME"]))
    with unchangeable(phome / LOCK_FILE):
        assert main(["server", "stop"]) == 2
    assert _error(capsys) == (
        f"cannot stop the local Prefect server (pid {server.pid}) of {phome}: "
        f"cannot open {phome / LOCK_FILE}: {DENIED}"
    )
    assert is_ours(server) and read_state(phome) == server


def test_a_record_that_cannot_be_removed(
    own_server: ServerState, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server is stopped, and the line says its record stays."""
    server = own_server
    phome = prefect_home(Path(os.environ["REVIEWFLOW_HOME"]))
    with unchangeable(phome):
        assert main(["server", "stop"]) == 2
        out, err = capsys.readouterr()
    assert out == f"stopped (pid {server.pid}, Prefect {prefect_version()})\n"
    assert err == (
        f"reviewflow: error: stopped the local Prefect server (pid {server.pid}) of {phome}, "
        f"but cannot remove its record: cannot change {phome / STATE_FILE}: {DENIED}\n"
    )
    assert not is_ours(server)


def test_a_review_records_itself_privately_until_it_ends(tmp_path: Path) -> None:
    phome = tmp_path / "phome"
    with ReviewRecord(phome, "/some/repo") as record:
        assert record.path == reviews_dir(phome) / f"{os.getpid()}.json"
        assert record.path.stat().st_mode & 0o777 == 0o600
        assert reviews_dir(phome).stat().st_mode & 0o777 == 0o700
        assert f'"process_start": "{process_start(os.getpid())}"' in record.path.read_text()
    assert list(reviews_dir(phome).iterdir()) == []
    assert ReviewRecord(None, "/some/repo").path is None  # the user's own API: not recorded
