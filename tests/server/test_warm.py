"""The warm review process: a review handed over to it runs as it would have in the CLI.

One reviewflow home (its managed server and warm process) and one wire model serve the whole
module: every process start costs seconds. The tests run in file order: the first run starts
the warm process, the last stops it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.cli.main import main
from flows.local.api import PREPARING_NOTE
from flows.local.control import stop_server
from flows.local.process import read_state
from flows.local.settings import prefect_home
from flows.local.warm import client as warm_client
from flows.local.warm import state as warm
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.server.test_local_server import _gone
from tests.wire_server import Delay, RecordedRequest, Reply, WireServer

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-warm-test-secret-key"
FAST, SLOW = "app/fast.py", "app/slow.py"
FINDING = {
    "severity": "high",
    "category": "bug",
    "file": FAST,
    "existing_code": "return open('x').read()",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use a with-block",
    "confidence": 0.9,
}
# Prefect, the SDKs, and pydantic (the CLI's config schema: the hand-over comes before it).
HEAVY = ("prefect", "openai", "anthropic", "google.genai", "pydantic")
# Runs the CLI as the `reviewflow` script does, then records which of those it imported.
CLI_RECORDING_IMPORTS = (
    "import sys; from flows.cli.entry import entry; code = entry(sys.argv[2:]); "
    f"open(sys.argv[1], 'w').write(repr(sorted(m for m in {HEAVY!r} if m in sys.modules))); "
    "sys.stdout.flush(); raise SystemExit(code)"
)


class Reviewer(ScriptedReviewer):
    """A finding on the fast file; the slow file's requests hang while `hang` is set."""

    hang = False

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        if self.hang and SLOW in text:
            return Delay(60)
        return super()._main(record, text)


class Setup:
    def __init__(self, root: Path, wire: WireServer) -> None:
        self.root, self.wire = root, wire
        self.home = root / "home"
        self.phome = prefect_home(self.home)
        self.repo = GitRepo.init(root / "repo")
        for path in (FAST, SLOW):
            self.repo.write(path, "def f():\n    return 1\n")
        self.repo.commit("base")
        for path in (FAST, SLOW):
            self.repo.write(path, "def f():\n    return open('x').read()\n")
        self.repo.commit("change")
        self.reviewer = Reviewer({FAST: [FINDING], SLOW: []})
        wire.respond("openai", self.reviewer)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "REVIEWFLOW_HOME": str(self.home),
            "REVIEWFLOW_MODEL_NAME": "test-model",
            "REVIEWFLOW_MODEL_ENDPOINT": self.wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": SECRET,
            **extra,
        }

    def args(self, *more: str) -> list[str]:
        change = [] if "--diff" in more else ["--commit", "HEAD"]
        return ["review", "--repo", str(self.repo.root), *change, "--no-cache", *more]

    def review(self, cwd: Path, *more: str, **env: str) -> subprocess.CompletedProcess[str]:
        cwd.mkdir(parents=True, exist_ok=True)
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *self.args(*more)],
            cwd=cwd,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def start(self, cwd: Path, *more: str, **kwargs: Any) -> subprocess.Popen[str]:
        cwd.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *self.args(*more)],
            cwd=cwd,
            env=self.env(),
            text=True,
            **kwargs,
        )

    def warm_pid(self) -> int | None:
        return warm.warm_pid(self.phome)

    def wait_warm(self) -> int:
        """The warm process's pid, once it accepts hand-overs (its imports take seconds)."""
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            pid = self.warm_pid()
            if pid is not None and (self.phome / warm.SOCKET_FILE).exists():
                return pid
            time.sleep(0.2)
        raise AssertionError(f"no warm process: {(self.phome / warm.LOG_FILE).read_text()}")

    def slow_asked(self) -> bool:
        return any(SLOW in str(request.body) for request in self.wire.requests())


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with WireServer() as wire:
        setup = Setup(tmp_path_factory.mktemp("warm"), wire)
        yield setup
        main_env = {"REVIEWFLOW_HOME": str(setup.home)}
        os.environ.update(main_env)
        main(["server", "stop"])


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _stable(text: str) -> str:
    """Console output without what differs between two runs: the review's time and duration."""
    return re.sub(r"\d{8}T\d{6}Z|\d+\.\d s\b", "T", text)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((path / "review-report.json").read_text())
    return report


def test_a_review_handed_over_prints_and_writes_what_an_in_process_one_does(
    setup: Setup, tmp_path: Path
) -> None:
    first = setup.review(tmp_path / "a", "--report-dir", "out")  # in-process; starts one
    assert first.returncode == 1, first.stderr
    first_stderr = first.stderr.removeprefix(PREPARING_NOTE)  # the home's first run
    pid = setup.wait_warm()
    marker = tmp_path / "imported"
    second = subprocess.run(
        [sys.executable, "-c", CLI_RECORDING_IMPORTS, str(marker),
         *setup.args("--report-dir", "out")],
        cwd=tmp_path / "a", env=setup.env(), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert marker.read_text() == "[]"  # the CLI imported neither Prefect, an SDK nor pydantic
    assert second.returncode == 1
    assert (_stable(second.stdout), second.stderr) == (_stable(first.stdout), first_stderr)
    assert [f["path"] for f in _report(tmp_path / "a" / "out")["findings"]] == [FAST]
    # Two at once (two children), one of them reading its diff from stdin.
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    piped = setup.start(
        tmp_path / "b", "--diff", "-", "--report-dir", "out", stdin=subprocess.PIPE, **pipes
    )
    other = setup.start(tmp_path / "c", "--report-dir", "out", **pipes)
    _, piped_err = piped.communicate(setup.repo.git("diff", "HEAD~1", "HEAD"), timeout=300)
    _, other_err = other.communicate(timeout=300)
    assert (piped.returncode, other.returncode) == (1, 1), piped_err + other_err
    for cwd in ("b", "c"):
        assert [f["path"] for f in _report(tmp_path / cwd / "out")["findings"]] == [FAST]
    assert setup.warm_pid() == pid  # all handed over to the same process


def test_the_warm_process_never_holds_the_key(setup: Setup) -> None:
    pid = setup.wait_warm()
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert SECRET.encode() not in environ
    assert b"DO_NOT_TRACK=1" in environ.split(b"\0")
    assert SECRET not in (setup.phome / warm.STATE_FILE).read_text()
    assert (setup.phome / warm.SOCKET_FILE).stat().st_mode & 0o777 == 0o600


def test_a_review_handed_over_with_other_prefect_settings_reads_them_again(
    setup: Setup, tmp_path: Path
) -> None:
    """The warm process read Prefect's settings for the quiet CLI; `--verbose` leaves Prefect's
    console logging on, so its child reads the settings and logging config again."""
    pid = setup.wait_warm()
    log = setup.phome / warm.LOG_FILE
    served = log.read_text().count("review pid ")
    verbose = setup.review(tmp_path, "--verbose")
    assert verbose.returncode == 1, verbose.stderr
    assert "Finished in state Completed()" in verbose.stderr
    assert log.read_text().count("review pid ") == served + 1  # handed over
    quiet = setup.review(tmp_path)
    assert quiet.returncode == 1
    assert "Finished in state" not in quiet.stderr
    assert log.read_text().count("review pid ") == served + 2
    assert setup.warm_pid() == pid


def test_ctrl_c_to_the_cli_cancels_the_review_handed_over(setup: Setup, tmp_path: Path) -> None:
    setup.wait_warm()
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    child = setup.start(
        tmp_path, "--report-dir", "out", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
            SLOW in str(r.body) for r in setup.wire.requests()[before:]
        ):
            assert child.poll() is None, "the review ended before it could be cancelled"
            time.sleep(0.1)
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        setup.reviewer.hang = False
        child.kill()
    assert child.returncode == 130, stderr
    report = _report(tmp_path / "out")
    assert (report["status"], report["exit_code"]) == ("incomplete", 130)


def test_killing_the_cli_kills_the_review_handed_over(setup: Setup, tmp_path: Path) -> None:
    pid = setup.wait_warm()
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    child = setup.start(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any(
            SLOW in str(r.body) for r in setup.wire.requests()[before:]
        ):
            time.sleep(0.1)
        (forked,) = _children(pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _gone(forked, within=30.0)
    finally:
        setup.reviewer.hang = False
    assert setup.warm_pid() == pid  # the warm process itself goes on


def test_a_stale_warm_process_is_replaced(setup: Setup, tmp_path: Path) -> None:
    old = setup.wait_warm()
    state = json.loads((setup.phome / warm.STATE_FILE).read_text())
    state["fingerprint"] = "code of yesterday"
    (setup.phome / warm.STATE_FILE).write_text(json.dumps(state))
    done = setup.review(tmp_path, "--report-dir", "out")
    assert done.returncode == 1, done.stderr
    assert [f["path"] for f in _report(tmp_path / "out")["findings"]] == [FAST]
    assert _gone(old, within=30.0)
    assert setup.wait_warm() != old


def test_ci_runs_neither_use_nor_start_a_warm_process(setup: Setup, tmp_path: Path) -> None:
    warm.stop_warm(setup.phome)
    server = read_state(setup.phome)
    done = setup.review(tmp_path, "--report-dir", "out", CI="true")
    assert done.returncode == 1, done.stderr
    assert setup.warm_pid() is None
    assert not (setup.phome / warm.STATE_FILE).exists()
    assert read_state(setup.phome) == server  # the server it did not start is kept


def test_a_ci_run_that_started_its_server_stops_it_quietly(setup: Setup, tmp_path: Path) -> None:
    stop_server(setup.home)
    done = setup.review(tmp_path, "--report-dir", "out", CI="true")
    assert done.returncode == 1, done.stderr
    # Prefect's workers sent what they held before the server stopped, not at exit.
    assert "Error logging to API" not in done.stderr
    assert done.stderr == ""
    assert read_state(setup.phome) is None and setup.warm_pid() is None


def test_server_stop_stops_the_warm_process(
    setup: Setup,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert setup.review(tmp_path, "--report-dir", "out").returncode == 1
    pid = setup.wait_warm()
    monkeypatch.setenv("REVIEWFLOW_HOME", str(setup.home))
    assert main(["server", "status"]) == 0
    assert f"warm review process: pid {pid}\n" in capsys.readouterr().out
    assert main(["server", "stop"]) == 0
    assert _gone(pid, within=1.0)
    assert main(["server", "status"]) == 0
    assert capsys.readouterr().out.endswith("no warm process\n")


@pytest.mark.parametrize(
    ("replies", "code", "stderr"),
    [
        ([], None, ""),  # the warm process was exiting: the CLI runs the review itself
        ([warm_client.TAKEN, b"1\n"], 1, ""),
        ([warm_client.TAKEN], 2, warm_client.ENDED_UNEXPECTEDLY.format(log="LOG")),
    ],
)
def test_the_cli_side_of_a_hand_over(
    replies: list[bytes],
    code: int | None,
    stderr: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli, child = socket.socketpair()
    with cli, child, open(os.devnull) as devnull:
        monkeypatch.setattr(sys, "stdin", devnull)
        answered: list[Any] = []

        def answer() -> None:
            _, fds, _, _ = socket.recv_fds(child, 1, 3)
            answered.append(json.loads(child.makefile("rb").readline()))
            for fd in fds:
                os.close(fd)
            for reply in replies:
                child.sendall(reply)
            child.shutdown(socket.SHUT_WR)

        thread = threading.Thread(target=answer)
        thread.start()
        assert warm_client._converse(cli, ["review", "--repo", "."], Path("LOG")) == code
        thread.join()
    assert capsys.readouterr().err == stderr
    (header,) = answered
    assert (header["argv"][1:], header["cwd"]) == (["review", "--repo", "."], os.getcwd())
    assert header["environ"] == dict(os.environ)
