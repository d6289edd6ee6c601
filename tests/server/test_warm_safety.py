"""The warm process's safety parts on their own: its code manifest, its socket's directory and
peer checks, the CLI side of a hand-over (signals included), and refusals before a fork."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.local.process import ServerState, write_state
from flows.local.warm import child as warm_child
from flows.local.warm import client as warm_client
from flows.local.warm import main as warm_main
from flows.local.warm.manifest import CodeManifest
from flows.local.warm.sockets import (
    MAX_PATH_BYTES,
    make_private_dir,
    path_problem,
    peer_uid,
    private_dir_problem,
    socket_path,
)
from reviewflow import cancel


def test_the_manifest_sees_an_edit_an_upgrade_and_a_new_file_but_not_a_byte_code_cache(
    tmp_path: Path,
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "site-packages"
    for directory in (ours, theirs / "dep"):
        directory.mkdir(parents=True)
        (directory / "module.py").write_text("x = 1\n")

    def manifest() -> CodeManifest:
        files = [str(ours / "module.py")]
        return CodeManifest(files, [str(theirs), str(theirs / "dep")], [str(ours)])

    built = manifest()
    assert built.changed() is None
    (theirs / "dep" / "__pycache__").mkdir()  # a later import wrote its byte code
    (theirs / ".cache").mkdir()  # and no dot-name, nor a file that is not code, is a change
    (theirs / "README.txt").write_text("notes\n")
    assert built.changed() is None
    (ours / "module.py").write_text("x = 22\n")  # edited in place (same inode)
    assert built.changed() == str(ours / "module.py")
    built = manifest()
    replacement = theirs / "dep" / "module.py.new"
    replacement.write_text("x = 1\n")
    replacement.replace(theirs / "dep" / "module.py")  # as an installer writes it: a new file
    assert built.changed() == str(theirs / "dep")
    built = manifest()
    (theirs / "dep-1.1.dist-info").mkdir()  # a distribution installed beside
    assert built.changed() == str(theirs)
    built = manifest()
    (ours / "SKILL.md").write_text("new rule\n")  # a data file added to our packages
    assert built.changed() == str(ours)


def test_the_manifest_of_this_process_covers_every_imported_module_and_our_data_files() -> None:
    manifest = CodeManifest.of_this_process()
    root = Path(warm_main.__file__).resolve().parents[3]
    assert str(root / "reviewflow" / "prompts.py") in manifest.files
    assert any(path.endswith("SKILL.md") for path in manifest.files)
    assert any(path.endswith(".j2") for path in manifest.files)
    assert os.path.dirname(pytest.__file__) in manifest.directories  # site-packages' own
    assert os.path.dirname(json.__file__) in manifest.directories  # the standard library
    assert manifest.changed() is None


def test_the_socket_path_stays_short_under_a_deep_home(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["deep" * 10] * 10, "prefect", "3.9.1")
    runtime = Path(tempfile.mkdtemp(prefix="rf-", dir="/tmp"))  # short, as a runtime dir is
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    path = socket_path(env, deep, "0123456789ab")
    runtime.rmdir()
    assert path.parent == runtime / f"reviewflow-{os.getuid()}"
    assert path_problem(path) is None and len(os.fsencode(path)) <= MAX_PATH_BYTES
    assert socket_path(env, deep.parent, "0123456789ab") != path  # one per Prefect home
    assert socket_path(env, deep, "ba9876543210") != path  # one per install
    too_long = Path("/" + "x" * MAX_PATH_BYTES)
    assert path_problem(too_long) is not None


def test_the_socket_directory_must_be_private(tmp_path: Path) -> None:
    made = tmp_path / "made"
    old = os.umask(0o022)
    try:
        assert make_private_dir(made) is None
    finally:
        os.umask(old)
    assert made.stat().st_mode & 0o777 == 0o700
    made.chmod(0o755)
    assert make_private_dir(made) == f"{made} has mode 0755, not 0700"
    link = tmp_path / "link"
    link.symlink_to(made)
    assert private_dir_problem(link) == f"{link} is not a directory"
    if os.getuid() == 0:
        made.chmod(0o700)
        os.chown(made, 65534, -1)
        assert private_dir_problem(made) == (
            f"{made} belongs to uid 65534, not to this user (uid {os.getuid()})"
        )


def test_the_peer_uid_is_read_from_the_connection_itself() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert peer_uid(left) == peer_uid(right) == os.getuid()


def _status_of(code: str) -> int:
    """The raw wait status of a Python process running `code`."""
    process = subprocess.Popen([sys.executable, "-c", code])
    return os.waitpid(process.pid, 0)[1]


def test_a_childs_end_as_the_warm_log_says_it() -> None:
    assert warm_main.ended(_status_of("raise SystemExit(3)")) == "exit 3"
    killed = _status_of("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert warm_main.ended(killed).startswith("killed by SIGSEGV")
    stop = _status_of(f"raise SystemExit({warm_child.STOP_EXIT})")
    assert warm_main.ended(stop) == "declined: the config turns the warm process off"


def test_a_working_directory_the_child_cannot_enter_gives_the_review_back(tmp_path: Path) -> None:
    not_a_directory = os.open(tmp_path / "file", os.O_WRONLY | os.O_CREAT)
    before = os.getcwd()
    assert warm_child._enter(not_a_directory) is False
    assert os.getcwd() == before
    with pytest.raises(OSError):
        os.fstat(not_a_directory)  # closed either way


class FakeChild:
    """The child's end of a hand-over, scripted: it reads the fds and header, then sends
    `replies` (a callable reply runs instead, on the connection), ends its side, and hears
    what the CLI sends until the CLI closes."""

    def __init__(self, replies: list[bytes | Callable[[socket.socket], None]]) -> None:
        self.cli, self.child = socket.socketpair()
        self.replies = replies
        self.header: dict[str, Any] = {}
        self.fds = 0
        self.heard = b""
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        _, fds, _, _ = socket.recv_fds(self.child, 1, 4)
        self.fds = len(fds)
        reader = self.child.makefile("rb")
        self.header = json.loads(reader.readline())
        for fd in fds:
            os.close(fd)
        for reply in self.replies:
            if callable(reply):
                reply(self.child)
            else:
                self.child.sendall(reply)
        with contextlib.suppress(OSError):  # nothing more from here: the CLI reads the end
            self.child.shutdown(socket.SHUT_WR)
        self.child.settimeout(5)
        with contextlib.suppress(OSError):
            self.heard = reader.read()  # what the CLI sent after the header, until it closed
        self.child.close()

    def converse(self) -> int | None:
        self.thread.start()
        try:
            return warm_client._converse(self.cli, ["review", "--repo", "."], Path("LOG"))
        finally:
            self.cli.close()
            self.thread.join(timeout=10)


@pytest.mark.parametrize(
    ("replies", "code", "stderr"),
    [
        ([], None, ""),  # the warm process refused it, or was exiting: the CLI runs it itself
        ([warm_client.TAKEN, b"1\n"], 1, ""),
        ([warm_client.TAKEN, warm_client.DECLINED], None, ""),  # the config turns it off
        ([warm_client.TAKEN], 2, warm_client.ENDED_UNEXPECTEDLY.format(log="LOG")),
    ],
)
def test_the_cli_side_of_a_hand_over(
    replies: list[bytes | Callable[[socket.socket], None]],
    code: int | None,
    stderr: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = FakeChild(replies)
    assert fake.converse() == code
    assert capsys.readouterr().err == stderr
    assert fake.fds == 4  # stdin, stdout, stderr and the working directory
    assert fake.header["argv"][1:] == ["review", "--repo", "."]
    assert fake.header["environ"] == dict(os.environ)


def _interrupt(times: int) -> Callable[[socket.socket], None]:
    def send(child: socket.socket) -> None:
        for _ in range(times):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)

    return send


def test_a_ctrl_c_before_taken_is_forwarded_once_the_header_is_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A Ctrl-C that comes while the CLI waits for `taken` is the child's to handle."""
    fake = FakeChild([_interrupt(1), warm_client.TAKEN, b"130\n"])
    assert fake.converse() == 130
    assert fake.heard == b"int\n"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("child_says", "err"),
    [
        ([b"130\n"], ""),  # the child exits at once and writes the line itself
        ([], warm_client.CANCELLED),  # a child that does not: the CLI ends it, and says so
    ],
)
def test_a_second_ctrl_c_is_the_childs_to_end_at_once_else_the_hand_over_ends(
    child_says: list[bytes],
    err: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = FakeChild([warm_client.TAKEN, _interrupt(2), *child_says])
    assert fake.converse() == 130
    assert fake.heard == b"int\nint\n"  # both forwarded
    assert capsys.readouterr().err == err
    assert cancel.requested()  # a third signal, to the CLI's own handler, exits at once


def test_a_second_ctrl_c_before_taken_ends_the_hand_over(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = FakeChild([_interrupt(2)])
    assert fake.converse() == 130
    assert fake.heard == b"int\n"  # no child took it: the hand-over ended at the second
    assert capsys.readouterr().err == warm_client.CANCELLED


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[argparse.Namespace, threading.Thread]]:
    """`serve` in a thread of this process, for a stand-in server, with no code change."""
    instance = "reviewflow-stand-in-server"
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", instance])
    home, runtime = tmp_path / "prefect", tmp_path / "run"
    runtime.mkdir(mode=0o700)
    write_state(home, ServerState(server.pid, 9, instance, "", 5.0, time.time()))
    args = argparse.Namespace(
        home=home, instance="reviewflow-warm-test", server_instance=instance, idle_seconds=60,
        install="test", socket=runtime / "warm.sock",
    )  # fmt: skip
    manifest = CodeManifest([], [])
    thread = threading.Thread(
        target=warm_main.serve, args=(args, _no_cli, lambda: None, manifest), daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not args.socket.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield args, thread
    finally:
        server.kill()
        server.wait()
        thread.join(timeout=30)


def _no_cli(argv: Any, forked: Any) -> int:
    raise AssertionError("a refused hand-over ran the CLI")


def _hand_over(path: Path) -> int | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        return warm_client._converse(conn, ["review"], Path("LOG"))


def test_a_fork_with_other_threads_running_is_refused_and_the_warm_process_goes_on(
    serving: tuple[argparse.Namespace, threading.Thread], capfd: pytest.CaptureFixture[str]
) -> None:
    args, thread = serving
    assert _hand_over(args.socket) is None  # the CLI runs the review itself
    assert _hand_over(args.socket) is None
    assert thread.is_alive()  # and the warm process serves on
    assert capfd.readouterr().err.count("threads run here; a fork would copy them") == 2


def test_a_failed_fork_is_refused_and_the_warm_process_goes_on(
    serving: tuple[argparse.Namespace, threading.Thread],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    args, thread = serving
    monkeypatch.setattr(warm_main, "thread_count", lambda: 1)
    monkeypatch.setattr(os, "fork", no_fork)
    assert _hand_over(args.socket) is None
    assert thread.is_alive()
    assert "fork failed (Resource temporarily unavailable)" in capfd.readouterr().err
