"""Where the stages run, checked before the review: a Dask scheduler that refuses, stays silent
or is not one; a shared store that is a file, relative, or inside the reviewed repository; a
scheduler named without the Dask runner. Each is one line and exit 2, never "internal error",
and no model request. The store's folders and files are the user's alone."""

from __future__ import annotations

import contextlib
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config.placement import check_scheduler
from reviewflow.errors import ConfigError
from tests.deploy.scenario import RISKY, SPLIT, use_model
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import WireServer


@pytest.fixture
def changed(repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    use_model(monkeypatch, wire)
    repo.write("app/settings.py", "x = 1\n")
    repo.commit("base")
    repo.write("app/settings.py", RISKY)
    repo.commit("read settings")
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    return repo


def _review(repo: GitRepo, out: Path, *flags: str) -> int:
    args = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "off"]
    return main([*args, "--report-dir", str(out), "--no-warm", *flags])


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    return err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _not_a_scheduler() -> Iterator[int]:
    """A TCP service on loopback that answers every connection with bytes Dask cannot read."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                with conn:
                    conn.sendall(b"\xff" * 64 + b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        with contextlib.suppress(OSError):
            socket.create_connection(server.getsockname(), timeout=1).close()
        server.close()
        thread.join(timeout=5)


def test_a_scheduler_that_refuses_is_one_line_before_any_request(
    changed: GitRepo, wire: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    # --dask-address alone asks for the Dask runner (it was ignored on threads)
    assert _review(changed, tmp_path / "out", "--dask-address", address) == 2
    assert _one_line(capsys) == (
        f"reviewflow: error: cannot reach the Dask scheduler at {address} "
        "(review.dask_address): the connection was refused\n"
    )
    assert wire.requests() == []


@pytest.mark.usefixtures("prefect_harness")
def test_a_service_that_is_not_a_scheduler_is_one_line(
    changed: GitRepo, wire: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with _not_a_scheduler() as port:
        address = f"tcp://127.0.0.1:{port}"
        code = _review(
            changed, tmp_path / "out", "--task-runner", "dask", "--dask-address", address
        )
    assert code == 2
    assert _one_line(capsys).startswith(
        f"reviewflow: error: cannot connect to the Dask scheduler at {address}"
    )
    assert wire.requests() == []


def test_a_silent_scheduler_is_given_up_after_the_wait() -> None:
    """A listener whose queue is full: the next connection is neither accepted nor refused."""
    with socket.create_server(("127.0.0.1", 0), backlog=0) as server:
        host, port = server.getsockname()
        queued = []
        with contextlib.suppress(OSError):
            for _ in range(8):  # fill the accept queue (its length is the kernel's to choose)
                queued.append(socket.create_connection((host, port), timeout=0.5))
        try:
            with pytest.raises(ConfigError) as raised:
                check_scheduler(f"tcp://{host}:{port}", wait=0.5)
        finally:
            for conn in queued:
                conn.close()
    assert str(raised.value) == (
        f"cannot reach the Dask scheduler at tcp://{host}:{port} (review.dask_address): "
        "no answer within 0.5 s"
    )


def test_a_scheduler_named_for_the_thread_runner_is_refused(
    changed: GitRepo, wire: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--task-runner", "thread", "--dask-address", "tcp://127.0.0.1:8786")
    assert _review(changed, tmp_path / "out", *flags) == 2
    assert "is used only with review.task_runner dask" in _one_line(capsys)
    assert wire.requests() == []


@pytest.mark.parametrize("where", ["file", "under a file", "relative", "in the repository"])
def test_a_store_that_cannot_be_one_is_one_line(
    changed: GitRepo,
    wire: WireServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x\n")
    monkeypatch.chdir(changed.root)  # a relative store would land in the repository
    store = {
        "file": str(a_file),
        "under a file": str(a_file / "store"),
        "relative": "store",
        "in the repository": str(changed.root / "store"),
    }[where]
    before = changed.git("status", "--porcelain", "--ignored")
    assert _review(changed, tmp_path / "out", "--shared-store", store) == 2
    err = _one_line(capsys)
    assert err.startswith("reviewflow: error: ") and "store" in err
    assert wire.requests() == []
    assert changed.git("status", "--porcelain", "--ignored") == before  # nothing written there


@pytest.mark.usefixtures("prefect_harness")
def test_the_store_is_the_users_alone(changed: GitRepo, wire: WireServer, tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "snapshots").mkdir(parents=True, mode=0o755)  # left by an earlier version
    assert _review(changed, tmp_path / "out", "--shared-store", str(store)) == 1
    assert wire.requests()
    made = list(store.rglob("*"))
    assert [p.name for p in made if p.suffix == ".bundle"]
    assert any(p.parent.name == "results" for p in made)
    for path in made:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {oct(mode)}"


def test_the_config_files_values_are_checked_too(
    changed: GitRepo, wire: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x\n")
    assert main(["config", "set", "review.shared_store", str(a_file)]) == 0
    capsys.readouterr()
    assert _review(changed, tmp_path / "out") == 2
    assert _one_line(capsys) == (
        f"reviewflow: error: review.shared_store ({a_file}) is not a directory\n"
    )
    assert main(["config", "set", "review.dask_address", "tcp://127.0.0.1:8786"]) == 0
    capsys.readouterr()
    assert _review(changed, tmp_path / "out") == 2  # the file's task runner: threads
    assert "review.dask_address (tcp://127.0.0.1:8786) is used only with" in _one_line(capsys)
    assert wire.requests() == []
