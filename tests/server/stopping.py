"""Signals at points of a review's life, through real CLI processes: what the stop tests share.

A review of one file with every model stage (a plan, the tool loop, a relocation, the review
filter, and with `--language de` a localization) whose answers a `StopReviewer` scripts: the
requests of the stage it is told to hang wait (cut short when the wire server stops), so a
signal can be sent once one has reached the model; `fail_once` answers the first tool-loop
request with a 500, which Prefect retries 2 s later. Points are reached by waiting for what
can be seen (a request at the model, a file, a process, a handler in place), never by sleeping.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.local.settings import prefect_home
from flows.local.warm import state as warm
from flows.local.warm.sockets import install_key
from reviewflow.cancel import CANCELLED_LINE
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.gitutil import GitRepo
from tests.wire_server import Delay, HttpError, RecordedRequest, Reply, WireServer

ROOT = Path(__file__).resolve().parents[2]
BIG = "app/big.py"  # 60 changed lines: planned
PLACED = {
    "severity": "high",
    "category": "bug",
    "file": BIG,
    "existing_code": "return open('x').read()",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use a with-block",
    "confidence": 0.9,
}
ASTRAY = {**PLACED, "existing_code": "code that is nowhere", "title": "Somewhere else"}  # relocated
STAGES = ("plan", "main", "relocate", "filter", "localize")
EXIT_BOUND_S = 20.0  # how long a test waits for a cancelled review to end (it takes < 5 s)
_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


class StopReviewer(ScriptedReviewer):
    """`ScriptedReviewer` whose `hang` stage's requests wait; `fail_once`: a 500 first. Set
    `release` and they are answered as usual (and no later request waits)."""

    def __init__(self) -> None:
        super().__init__({BIG: [PLACED, ASTRAY]})
        self.hang: str | None = None
        self.fail_once = False
        self.failed = threading.Event()
        self.hanging: list[str] = []
        self.release = threading.Event()

    def __call__(self, record: RecordedRequest) -> Reply:
        stage = stage_of(json.dumps(record.body, ensure_ascii=False))
        if stage == self.hang and not self.release.is_set():
            self.hanging.append(stage)
            if self.release.wait(120):
                return super().__call__(record)
            return Delay(0)
        if stage == "main" and self.fail_once and not self.failed.is_set():
            self.failed.set()
            return HttpError(500)
        return super().__call__(record)


@dataclass
class Ended:
    """How a signalled review ended."""

    code: int
    seconds: float  # from the first signal to the CLI's exit
    stderr: str
    report: dict[str, Any] | None
    report_path: Path
    requests_after: int  # model requests that reached the wire server after the first signal


def changed_repo(root: Path) -> GitRepo:
    repo = GitRepo.init(root)
    repo.write(BIG, "def f():\n    return 1\n")
    repo.commit("base")
    body = "".join(f"    total_{i} = {i}\n" for i in range(58))
    repo.write(BIG, f"def f():\n{body}    return open('x').read()\n")
    repo.commit("change")
    return repo


class Reviews:
    """Reviews of `changed_repo` by the CLI in a home of their own, against `wire`."""

    def __init__(self, root: Path, wire: WireServer, runtime: Path) -> None:
        self.root, self.wire, self.runtime = root, wire, runtime
        self.home = root / "home"
        self.phome = prefect_home(self.home)
        self.repo = changed_repo(root / "repo")
        self.reviewer = StopReviewer()
        wire.respond("openai", self.reviewer)
        self.runs = 0

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "REVIEWFLOW_HOME": str(self.home),
            "REVIEWFLOW_MODEL_NAME": "test-model",
            "REVIEWFLOW_MODEL_ENDPOINT": self.wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": "sk-stop-test",
            "XDG_RUNTIME_DIR": str(self.runtime),
            **extra,
        }

    def start(self, *flags: str, stdin: int | None = None, **env: str) -> Run:
        """A review in a session of its own (so what it leaves behind can be found)."""
        self.runs += 1
        cwd = self.root / f"run-{self.runs}"
        cwd.mkdir()
        change = [] if "--diff" in flags else ["--commit", "HEAD"]
        args = ["review", "--repo", str(self.repo.root), *change, "--no-cache", *flags]
        args += ["--report-dir", str(cwd / "out"), "--console", "off"]
        with open(cwd / "stderr", "wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "flows.cli", *args], cwd=cwd, env=self.env(**env),
                stdin=stdin, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
            )  # fmt: skip
        return Run(self, process, cwd)

    def review(self, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
        """A whole review, to its end."""
        args = ["review", "--repo", str(self.repo.root), "--commit", "HEAD", *flags]
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *args], cwd=self.root, env=self.env(**env),
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip

    def stage(self, name: str) -> Callable[[], bool]:
        """Until a request of the hanging stage `name` has reached the model."""
        self.reviewer.hang = name
        return lambda: name in self.reviewer.hanging

    def reset(self) -> None:
        self.reviewer.release.set()  # requests still waiting are answered, to no one
        self.reviewer = StopReviewer()
        self.wire.respond("openai", self.reviewer)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A `reviewflow` command other than a review, to its end."""
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *args], cwd=self.root, env=self.env(),
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


class WarmReviews(Reviews):
    """Reviews that a warm review process takes (one is started by a first review)."""

    def warm_pid(self) -> int | None:
        state = warm.read_warm(self.phome, install_key())
        running = state is not None and state in warm.running_warm(self.phome)
        log = Path(state.log) if state is not None else None
        serving = log is not None and log.exists() and "serving on" in log.read_text()
        return state.pid if running and serving and state is not None else None

    def ensure_warm(self) -> int:
        if self.warm_pid() is None:
            self.reset()
            done = self.review()
            assert done.returncode == 1, done.stderr
            assert eventually(lambda: self.warm_pid() is not None, within=240)
        pid = self.warm_pid()
        assert pid is not None
        return pid


class Run:
    """One review process."""

    def __init__(self, reviews: Reviews, process: subprocess.Popen[bytes], cwd: Path) -> None:
        self.reviews, self.process, self.cwd = reviews, process, cwd

    @property
    def stderr(self) -> str:
        return (self.cwd / "stderr").read_text(errors="replace")

    @property
    def report_path(self) -> Path:
        return self.cwd / "out" / "review-report.json"

    def wait_for(self, point: Callable[[], bool], what: str, within: float = 240.0) -> None:
        """Until `point()` holds; the review must still be running then."""
        deadline = time.monotonic() + within
        while not point():
            assert self.process.poll() is None, f"the review ended before {what}: {self.stderr}"
            assert time.monotonic() < deadline, f"never reached: {what}"
            time.sleep(0.02)

    def handlers_in_place(self) -> bool:
        """The CLI handles SIGTERM: `reviewflow.cancel` is installed (Python alone does not)."""
        return handles_sigterm(self.process.pid)

    def interrupt(
        self,
        signals: Sequence[int] = (signal.SIGINT,),
        gap: float = 0.05,
        then: Callable[[], None] | None = None,
    ) -> Ended:
        """Send `signals` (`gap` apart), then do `then()`, and wait for the review to end."""
        wire = self.reviews.wire
        before = len(wire.requests())
        sent = time.monotonic()
        for index, sig in enumerate(signals):
            if index:
                time.sleep(gap)
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)
        if then is not None:
            then()
        try:
            self.process.wait(timeout=EXIT_BOUND_S)
        finally:
            seconds = time.monotonic() - sent
            self.process.kill()
        self.wait_session_gone()
        report = json.loads(self.report_path.read_text()) if self.report_path.exists() else None
        return Ended(
            self.process.returncode, seconds, self.stderr, report, self.report_path,
            len(wire.requests()) - before,
        )  # fmt: skip

    def session(self) -> list[int]:
        """Processes left in the review's session (its git commands, say)."""
        return session_members(self.process.pid)

    def wait_session_gone(self) -> None:
        deadline = time.monotonic() + EXIT_BOUND_S
        while self.session() and time.monotonic() < deadline:
            time.sleep(0.05)


def handles_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.MULTILINE)
    return caught is not None and bool(int(caught.group(1), 16) & _SIGTERM_BIT)


def session_members(sid: int) -> list[int]:
    """Live processes (not zombies) of the session `sid`."""
    return _live(lambda fields: int(fields[3]) == sid)


def children(pid: int) -> list[int]:
    """Live child processes (not zombies) of `pid`."""
    return _live(lambda fields: int(fields[1]) == pid)


def _live(match: Callable[[list[str]], bool]) -> list[int]:
    """The pids of live processes whose /proc stat fields (after the name: state, ppid, pgrp,
    session, ...) `match`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and match(fields):
            found.append(int(entry.name))
    return found


def eventually(check: Callable[[], bool], within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def written_before(ended: Ended) -> Ended:
    """`ended`, a second signal's end while the reports were written: a complete report there
    was written before the signals (the second came before the cancel could write it again)."""
    if ended.report is not None and ended.report["status"] == "complete":
        ended.report = None
    return ended


def assert_cancelled(ended: Ended, *, started: bool | None, note: str = "") -> None:
    """Exit 130 within the bound, one line on stderr (never a traceback), no model request
    after the signal; the report (status incomplete, exit 130) when the review had `started`
    (None: either way, but the line names it when there is one)."""
    assert ended.code == 130, ended.stderr
    assert ended.seconds < EXIT_BOUND_S
    stderr = ended.stderr.removeprefix(note)
    if ended.report is None:
        assert stderr == f"{CANCELLED_LINE}\n"
        assert started is not True, "the review had started: its report is missing"
    else:
        assert stderr in (
            f"{CANCELLED_LINE} (report: {ended.report_path})\n",
            f"{CANCELLED_LINE}\n",
        )
        assert started is not False, "a review that had not started wrote a report"
        assert (ended.report["status"], ended.report["exit_code"]) == ("incomplete", 130)
        assert "cancelled" in [w["code"] for w in ended.report["warnings"]]
    assert ended.requests_after == 0


@contextlib.contextmanager
def fifo_drained(path: Path) -> Iterator[None]:
    """Read the FIFO `path` (a report the review writes: its writer blocked until now) to its
    end, as often as it is written, until the context ends."""
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            with open(path, "rb") as fifo:  # waits for a writer
                fifo.read()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        with contextlib.suppress(OSError):  # a reader waiting for a writer: end its wait
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout=5)


def reading_a_pipe(pid: int) -> bool:
    """The process's main thread waits to read a pipe (the diff on stdin, say)."""
    try:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def connected_unix_socket(pid: int) -> bool:
    """The process holds a connected Unix socket (a CLI that reached the warm process)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    inodes = {link[8:-1] for link in links if link.startswith("socket:[")}
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 7 and fields[6] in inodes and fields[5] == "03":
            return True
    return False
