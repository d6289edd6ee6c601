"""The warm review process: a review handed over to it runs as it would have in the CLI.

One reviewflow home (its managed server and warm process) and one wire model serve the whole
module: every process start costs seconds. Each test works alone and in any order: those that
need a warm process call `setup.ensure_warm()` (which starts one only when none runs), and those
that stop or turn off something put it back as they found it or leave it to the next
`ensure_warm`. The hand-over sockets live in a runtime directory of the module's own
(`XDG_RUNTIME_DIR`), outside pytest's private temporary tree, so that another uid can reach
them when a test loosens their modes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from flows.cli.main import main
from flows.local.api import PREPARING_NOTE
from flows.local.control import stop_server
from flows.local.process import read_state
from flows.local.settings import prefect_home
from flows.local.warm import client as warm_client
from flows.local.warm import state as warm
from flows.local.warm.sockets import install_key, socket_path
from tests.conftest import copy_prepared
from tests.flows.reviewer import ScriptedReviewer
from tests.git.test_environment import hostile_git_env
from tests.gitutil import GitRepo
from tests.server.stopping import children, eventually
from tests.server.test_local_server import _gone
from tests.wire_server import Delay, RecordedRequest, Reply, WireServer


def without_estimate(stderr: str) -> str:
    """A review's stderr without its estimate line (`reviewflow: estimate: ...`, printed by
    every review whose console is on): what these tests look at is everything else."""
    lines = stderr.splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("reviewflow: estimate: "))


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
# A client of the hand-over socket that is not our CLI: it sends what a CLI would (its stdio,
# working directory, a review's header) and prints what came back ("" when refused).
RAW_CLIENT = """
import json, os, socket, sys, time
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
header = json.loads(sys.argv[2])
try:
    socket.send_fds(conn, [b"F"], [0, 1, 2, os.open(".", os.O_RDONLY)])
    conn.sendall(json.dumps(header).encode() + b"\\n")
    if sys.argv[3] == "close-unread":  # leave `taken` unread: closing then resets the connection
        time.sleep(2)
        reply = b"closed"
    else:
        reply = conn.makefile("rb").readline()
except (BrokenPipeError, ConnectionResetError):  # refused as soon as it connected
    reply = b""
print(json.dumps(reply.decode()))
"""


class Reviewer(ScriptedReviewer):
    """A finding on the fast file; the slow file's requests hang while `hang` is set."""

    hang = False

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        if self.hang and SLOW in text:
            return Delay(60)
        return super()._main(record, text)


class Install:
    """An install of reviewflow: this checkout, or a copy of its packages on PYTHONPATH."""

    def __init__(self, pythonpath: str | None = None) -> None:
        self.pythonpath = pythonpath
        self.key = install_key() if pythonpath is None else self._key()

    def env(self) -> dict[str, str]:
        if self.pythonpath is None:
            return {}
        return {"PYTHONPATH": os.pathsep.join([self.pythonpath, os.environ["PYTHONPATH"]])}

    def _key(self) -> str:
        code = "from flows.local.warm.sockets import install_key; print(install_key())"
        done = subprocess.run(
            [sys.executable, "-c", code], env={**os.environ, **self.env()}, cwd="/",
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()


class Setup:
    def __init__(self, root: Path, wire: WireServer, runtime: Path) -> None:
        self.root, self.wire, self.runtime = root, wire, runtime
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
        self.here = Install()

    def env(self, install: Install | None = None, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "REVIEWFLOW_HOME": str(self.home),
            "REVIEWFLOW_MODEL_NAME": "test-model",
            "REVIEWFLOW_MODEL_ENDPOINT": self.wire.base_url("openai"),
            "REVIEWFLOW_MODEL_API_KEY": SECRET,
            "XDG_RUNTIME_DIR": str(self.runtime),
            **(install or self.here).env(),
            **extra,
        }

    def args(self, *more: str) -> list[str]:
        change = [] if {"--diff", "--workspace"} & set(more) else ["--commit", "HEAD"]
        more = tuple(arg for arg in more if arg != "--workspace")
        return ["review", "--repo", str(self.repo.root), *change, "--no-cache", *more]

    def review(
        self, cwd: Path, *more: str, install: Install | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        cwd.mkdir(parents=True, exist_ok=True)
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *self.args(*more)],
            cwd=cwd, env=self.env(install, **env), capture_output=True, text=True, timeout=300,
            check=False,
        )  # fmt: skip

    def start(self, cwd: Path, *more: str, **kwargs: Any) -> subprocess.Popen[str]:
        cwd.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            [sys.executable, "-m", "flows.cli", *self.args(*more)],
            cwd=cwd, env=self.env(), text=True, **kwargs,
        )  # fmt: skip

    def state(self, install: Install | None = None) -> warm.WarmState | None:
        return warm.read_warm(self.phome, (install or self.here).key)

    def warm_pid(self, install: Install | None = None) -> int | None:
        state = self.state(install)
        running = state is not None and state in warm.running_warm(self.phome)
        return state.pid if running and state is not None else None

    def log(self, install: Install | None = None) -> str:
        state = self.state(install)
        assert state is not None
        return Path(state.log).read_text()

    def wait_warm(self, install: Install | None = None) -> int:
        """The warm process's pid, once it accepts hand-overs (its imports take seconds)."""
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            pid, state = self.warm_pid(install), self.state(install)
            if pid is not None and state is not None and "serving on" in self.log(install):
                return pid
            time.sleep(0.2)
        raise AssertionError(f"no warm process: {self.state(install)}")

    def ensure_warm(self, install: Install | None = None) -> int:
        """A warm process of `install` that serves: the one running, else one a review starts."""
        if self.warm_pid(install) is None:
            done = self.review(self.root / "warm-up", install=install)
            assert done.returncode == 1, done.stderr
        return self.wait_warm(install)

    def served(self, install: Install | None = None) -> int:
        """How many reviews the warm process's log says its children finished."""
        return len(re.findall(r"^review pid \d+: exit", self.log(install), re.MULTILINE))

    def forks(self, install: Install | None = None) -> int:
        """How many children the warm process's log says it forked."""
        return len(re.findall(r"^\S+ review child \d+ started$", self.log(install), re.MULTILINE))

    def slow_asked(self, since: int) -> bool:
        return any(SLOW in str(request.body) for request in self.wire.requests()[since:])

    def wait_slow(self, since: int, process: subprocess.Popen[str]) -> None:
        """Until the hanging slow file's request reaches the model (the review is under way)."""
        deadline = time.monotonic() + 120
        while not self.slow_asked(since):
            assert process.poll() is None, "the review ended before it reached the model"
            assert time.monotonic() < deadline, "the review never reached the model"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, prepared_home: Path) -> Iterator[Setup]:
    runtime = Path(tempfile.mkdtemp(prefix="rf-run-", dir="/tmp"))
    try:
        with WireServer() as wire:
            setup = Setup(tmp_path_factory.mktemp("warm"), wire, runtime)
            copy_prepared(prepared_home, setup.home)  # its server starts cold, not first-ever
            yield setup
            os.environ.update(REVIEWFLOW_HOME=str(setup.home))
            main(["server", "stop"])
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def other_install(setup: Setup) -> Install:
    """A second install sharing the home: a copy of our packages, and of one dependency
    (Jinja2, which a warm process imports), first on PYTHONPATH."""
    copy, deps = setup.root / "other-install", setup.root / "deps"
    no_cache = shutil.ignore_patterns("__pycache__")
    for package in ("flows", "tasks", "reviewflow"):
        shutil.copytree(ROOT / package, copy / package, ignore=no_cache)
    shutil.copytree(Path(jinja2.__file__).parent, deps / "jinja2", ignore=no_cache)
    return Install(os.pathsep.join([str(copy), str(deps)]))


def _one_child(pid: int) -> int:
    deadline = time.monotonic() + 30
    while not (forked := children(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    (child,) = forked
    return child


def _stable(text: str) -> str:
    """Console output without what differs between two runs: the review's time and duration."""
    return re.sub(r"\d{8}T\d{6}Z|\d+\.\d s\b", "T", text)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((path / "review-report.json").read_text())
    return report


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what differs between two runs of the same review."""
    drop = ("review_id", "duration_ms", "process")
    meta = {k: v for k, v in report["metadata"].items() if k not in ("started_at", "finished_at")}
    return {**{k: v for k, v in report.items() if k not in drop}, "metadata": meta}


def test_a_review_handed_over_prints_and_writes_what_an_in_process_one_does(
    setup: Setup, tmp_path: Path
) -> None:
    pid = setup.ensure_warm()
    served = setup.served()
    first = setup.review(tmp_path / "a", "--report-dir", "out", "--no-warm")  # in-process
    assert first.returncode == 1, first.stderr
    marker = tmp_path / "imported"
    second = subprocess.run(
        [sys.executable, "-c", CLI_RECORDING_IMPORTS, str(marker),
         *setup.args("--report-dir", "out")],
        cwd=tmp_path / "a", env=setup.env(), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert marker.read_text() == "[]"  # the CLI imported neither Prefect, an SDK nor pydantic
    assert second.returncode == 1
    assert (_stable(second.stdout), second.stderr) == (_stable(first.stdout), first.stderr)
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
    assert eventually(lambda: setup.served() == served + 3)


def test_the_estimate_line_comes_first_in_a_log_that_is_no_terminal(
    setup: Setup, tmp_path: Path
) -> None:
    """stdout and stderr into one pipe, as a CI log takes them: the estimate line (stderr) comes
    before the console report (stdout), handed over as in the CLI's own process. The child's
    stderr was block-buffered (the interpreter makes it line-buffered), so it came out last."""
    setup.ensure_warm()
    served = setup.served()
    logs = []
    for name, flags in (("here", ["--no-warm"]), ("warm", [])):  # in the CLI, then handed over
        (tmp_path / name).mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *setup.args("--report-dir", "out", *flags)],
            cwd=tmp_path / name, env=setup.env(), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout
        logs.append(done.stdout)
    assert eventually(lambda: setup.served() == served + 1)  # the second was handed over
    for log in logs:
        first = log.splitlines()[0]
        assert first.startswith("reviewflow: estimate: "), log
        assert "File handle never closed" in log


def test_the_warm_process_never_holds_the_key_and_its_socket_is_private(setup: Setup) -> None:
    pid = setup.ensure_warm()
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert SECRET.encode() not in environ
    assert b"DO_NOT_TRACK=1" in environ.split(b"\0")
    state = setup.state()
    assert state is not None
    assert SECRET not in warm.state_file(setup.phome, state.install).read_text()
    sock = Path(state.socket)
    assert sock.parent == setup.runtime / f"reviewflow-{os.getuid()}"
    assert sock.stat().st_mode & 0o777 == 0o600
    assert sock.parent.stat().st_mode & 0o777 == 0o700


def test_a_review_handed_over_with_other_prefect_settings_reads_them_again(
    setup: Setup, tmp_path: Path
) -> None:
    """The warm process read Prefect's settings for the quiet CLI; `--verbose` leaves Prefect's
    console logging on, so its child reads the settings and logging config again."""
    pid = setup.ensure_warm()
    served = setup.served()
    verbose = setup.review(tmp_path, "--verbose")
    assert verbose.returncode == 1, verbose.stderr
    assert "Finished in state Completed()" in verbose.stderr
    assert eventually(lambda: setup.served() == served + 1)  # handed over
    quiet = setup.review(tmp_path)
    assert quiet.returncode == 1
    assert "Finished in state" not in quiet.stderr
    assert eventually(lambda: setup.served() == served + 2)
    assert setup.warm_pid() == pid


def test_ctrl_c_to_the_cli_cancels_the_review_handed_over(setup: Setup, tmp_path: Path) -> None:
    setup.ensure_warm()
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    child = setup.start(
        tmp_path, "--report-dir", "out", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        setup.wait_slow(before, child)
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        setup.reviewer.hang = False
        child.kill()
    assert child.returncode == 130, stderr
    report = _report(tmp_path / "out")
    assert (report["status"], report["exit_code"]) == ("incomplete", 130)


def test_a_second_ctrl_c_ends_the_hand_over_at_once_and_stops_its_child(
    setup: Setup, tmp_path: Path
) -> None:
    """The child is frozen (SIGSTOP), so the first Ctrl-C cannot end the review: the second
    ends the CLI's wait at once, and the child, let go again, finds its CLI gone and stops."""
    pid = setup.ensure_warm()
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    err = tmp_path / "stderr"  # not a pipe: the frozen child holds the CLI's stderr open
    with open(err, "w") as stderr:
        cli = setup.start(tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        setup.wait_slow(before, cli)
        forked = _one_child(pid)
        os.kill(forked, signal.SIGSTOP)
        cli.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert cli.poll() is None  # the first one is forwarded: the CLI waits for the child
        cli.send_signal(signal.SIGINT)
        cli.wait(timeout=30)
        os.kill(forked, signal.SIGCONT)
        assert _gone(forked, within=30.0)
    finally:
        setup.reviewer.hang = False
        cli.kill()
    assert (cli.returncode, without_estimate(err.read_text())) == (130, warm_client.CANCELLED)
    assert setup.warm_pid() == pid


def test_killing_the_cli_kills_the_review_handed_over(setup: Setup, tmp_path: Path) -> None:
    pid = setup.ensure_warm()
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    child = setup.start(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        setup.wait_slow(before, child)
        forked = _one_child(pid)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _gone(forked, within=30.0)
    finally:
        setup.reviewer.hang = False
    assert setup.warm_pid() == pid  # the warm process itself goes on
    assert eventually(lambda: f"review child {forked} ended: killed by SIGKILL" in setup.log())


def _raw_header(setup: Setup, *more: str) -> str:
    argv = [sys.executable, *setup.args(*more)]
    return json.dumps({"argv": argv, "environ": setup.env(), "umask": 0o022,
                       "stdio": [["utf-8", "strict"]] * 3})  # fmt: skip


def test_a_child_whose_cli_left_without_reading_stops_at_once(setup: Setup, tmp_path: Path) -> None:
    """A CLI that closes the connection with `taken` unread resets it: the child's watcher
    must stop the review all the same (it used to die of the ConnectionResetError)."""
    pid = setup.ensure_warm()
    state = setup.state()
    assert state is not None
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    client = subprocess.Popen(
        [sys.executable, "-c", RAW_CLIENT, state.socket, _raw_header(setup), "close-unread"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        forked = _one_child(pid)
        assert client.communicate(timeout=60)[0] == '"closed"\n'
        assert _gone(forked, within=30.0)
        assert not setup.slow_asked(before) or _gone(forked, within=0.1)
    finally:
        setup.reviewer.hang = False
        client.kill()
    assert setup.warm_pid() == pid


def test_a_crashed_child_is_exit_2_naming_the_log_that_keeps_its_end(
    setup: Setup, tmp_path: Path
) -> None:
    pid = setup.ensure_warm()
    state = setup.state()
    assert state is not None
    setup.reviewer.hang = True
    before = len(setup.wire.requests())
    cli = setup.start(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        setup.wait_slow(before, cli)
        forked = _one_child(pid)
        os.kill(forked, signal.SIGSEGV)
        _, stderr = cli.communicate(timeout=60)
    finally:
        setup.reviewer.hang = False
        cli.kill()
    ended = warm_client.ENDED_UNEXPECTEDLY.format(log=state.log)
    assert (cli.returncode, without_estimate(stderr)) == (2, ended)
    assert eventually(lambda: f"review child {forked} ended: killed by SIGSEGV" in setup.log())
    assert "Fatal Python error: Segmentation fault" in setup.log()  # the child's own last words
    assert setup.warm_pid() == pid


def _python_for(uid: int) -> str | None:
    """A Python that uid can run (ours lives under /root, which it cannot enter), or None."""
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            done = subprocess.run(
                [python, "-c", "pass"], preexec_fn=lambda: os.setuid(uid), capture_output=True,
                check=False,
            )  # fmt: skip
        except OSError:  # not found, or not executable by uid
            continue
        if done.returncode == 0:
            return python
    return None


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another uid")
def test_another_uid_is_refused_even_with_the_modes_loosened(setup: Setup, tmp_path: Path) -> None:
    nobody = 65534
    python = _python_for(nobody)
    if python is None:
        pytest.skip("no Python that uid 65534 can run")
    setup.ensure_warm()
    state = setup.state()
    assert state is not None
    sock = Path(state.socket)
    forks = setup.forks()
    tmp_path.chmod(0o777)
    for path, mode in ((setup.runtime, 0o711), (sock.parent, 0o777), (sock, 0o666)):
        path.chmod(mode)
    try:
        stranger = subprocess.run(
            [python, "-I", "-c", RAW_CLIENT, str(sock), _raw_header(setup), "read"],
            preexec_fn=lambda: os.setuid(nobody), cwd=tmp_path, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
    finally:
        for path, mode in ((setup.runtime, 0o700), (sock.parent, 0o700), (sock, 0o600)):
            path.chmod(mode)
    assert (stranger.returncode, stranger.stdout) == (0, '""\n'), stranger.stderr  # connected
    assert f"refused a hand-over from uid {nobody} " in setup.log()
    assert setup.forks() == forks  # nothing was forked


@pytest.mark.stress  # one of the warm path's refusals; `make test` keeps the socket path too long
def test_a_socket_directory_that_is_not_private_is_not_handed_over_to(
    setup: Setup, tmp_path: Path
) -> None:
    pid = setup.ensure_warm()
    state = setup.state()
    assert state is not None
    directory = Path(state.socket).parent
    served = setup.served()
    directory.chmod(0o755)
    try:
        done = setup.review(tmp_path)
    finally:
        directory.chmod(0o700)
    assert done.returncode == 1
    assert without_estimate(done.stderr) == warm_client.NOTE.format(
        what=f"not handing this review to the warm review process: {directory} has mode 0755, "
        "not 0700"
    )
    assert setup.served() == served and setup.warm_pid() == pid  # run in the CLI process
    assert setup.review(tmp_path).returncode == 1
    assert eventually(lambda: setup.served() == served + 1)  # private again: handed over


def test_warm_and_cold_behave_the_same_in_a_hostile_git_environment(
    setup: Setup, tmp_path: Path
) -> None:
    """`git -c` settings, another exec path, index or object store, traces: a review handed
    over drops them as one run in the CLI process does; no fsmonitor hook, no trace file."""
    setup.ensure_warm()
    decoy = GitRepo.init(tmp_path / "decoy")
    decoy.write("decoy.py", "x = 0\n")
    decoy.commit("decoy")
    hostile = hostile_git_env(tmp_path, decoy)
    setup.repo.write(FAST, "def f():\n    return open('x').read()  # and more\n")
    try:
        served = setup.served()
        cold = setup.review(tmp_path / "cold", "--workspace", "--report-dir", "out", "--no-warm",
                            **hostile)  # fmt: skip
        warm_ = setup.review(tmp_path / "warm", "--workspace", "--report-dir", "out", **hostile)
    finally:
        setup.repo.git("checkout", "--", FAST)
    assert eventually(lambda: setup.served() == served + 1)  # the second was handed over
    assert (cold.returncode, warm_.returncode) == (1, 1), cold.stderr + warm_.stderr
    assert (_stable(warm_.stdout), warm_.stderr) == (_stable(cold.stdout), cold.stderr)
    reports = [_comparable(_report(tmp_path / run / "out")) for run in ("cold", "warm")]
    assert reports[0] == reports[1]
    assert [f["path"] for f in reports[0]["findings"]] == [FAST]
    assert reports[0]["warnings"] == []
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("marker")) == []


def _gone_cwd(tmp_path: Path, name: str) -> list[str]:
    """A shell prefix that enters a new directory, deletes it, then runs the command there."""
    return ["sh", "-c", f'mkdir {name} && cd {name} && rmdir ../{name} && exec "$@"', "sh"]


def test_a_deleted_working_directory_and_an_unreadable_stdin_are_one_line_both_ways(
    setup: Setup, tmp_path: Path
) -> None:
    setup.ensure_warm()
    served = setup.served()
    cli = [sys.executable, "-m", "flows.cli", *setup.args()]
    results = []
    for flags in ([], ["--no-warm"]):
        results.append(subprocess.run(
            [*_gone_cwd(tmp_path, f"gone{len(flags)}"), *cli, *flags], cwd=tmp_path,
            env=setup.env(), capture_output=True, text=True, timeout=300, check=False,
        ))  # fmt: skip
    line = (
        "reviewflow: error: the current directory cannot be used (No such file or directory; "
        "deleted?): cd to an existing directory and run the command again\n"
    )
    assert [(r.returncode, r.stderr) for r in results] == [(2, line)] * 2
    write_only = os.open(tmp_path / "write-only", os.O_WRONLY | os.O_CREAT)  # reads: EBADF
    try:
        for flags in ([], ["--no-warm"]):
            done = subprocess.run(
                [sys.executable, "-m", "flows.cli", *setup.args("--diff", "-"), *flags],
                stdin=write_only, cwd=tmp_path, env=setup.env(), capture_output=True, text=True,
                timeout=300, check=False,
            )  # fmt: skip
            results.append(done)
    finally:
        os.close(write_only)
    unreadable = "reviewflow: error: cannot read the diff from stdin: Bad file descriptor\n"
    assert [(r.returncode, r.stderr) for r in results[2:]] == [(2, unreadable)] * 2
    closed = subprocess.run(
        [sys.executable, "-m", "flows.cli", *setup.args("--diff", "-")],
        stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0), cwd=tmp_path,
        env=setup.env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert (closed.returncode, closed.stderr) == (
        2, "reviewflow: error: cannot read the diff from stdin: stdin is closed\n"
    )  # fmt: skip
    assert eventually(lambda: setup.served() == served + 2)  # the first of each, handed over


def test_warm_process_false_in_the_config_stops_a_running_warm_process(
    setup: Setup, tmp_path: Path
) -> None:
    """The CLI hands over before it reads the config; the child reads it and, finding the warm
    process turned off, gives the review back to the CLI and stops the warm process."""
    pid = setup.ensure_warm()
    log = _log_path(setup, setup.here)
    config = ["config", "set", "prefect.warm_process"]
    cli = [sys.executable, "-m", "flows.cli"]
    run = {"env": setup.env(), "capture_output": True, "text": True, "check": True}
    subprocess.run([*cli, *config, "false"], **run)
    try:
        done = setup.review(tmp_path, "--report-dir", "out")
        assert done.returncode == 1, done.stderr
        assert [f["path"] for f in _report(tmp_path / "out")["findings"]] == [FAST]
        assert _gone(pid, within=30.0)
        assert "declined: the config turns the warm process off" in log.read_text()
        again = setup.review(tmp_path)  # run in the CLI process, and no warm process started
        assert again.returncode == 1 and setup.state() is None
    finally:
        subprocess.run([*cli, *config, "true"], **run)


@pytest.mark.stress  # two installs' warm processes (~30 s); the one-install paths stay in make test
def test_two_installs_alternating_keep_a_warm_process_each(
    setup: Setup, other_install: Install, tmp_path: Path
) -> None:
    ours, theirs = setup.ensure_warm(), setup.ensure_warm(other_install)
    assert ours != theirs
    counts = (setup.served(), setup.served(other_install))
    for _ in range(2):
        for install in (setup.here, other_install):
            done = setup.review(tmp_path, install=install)
            assert done.returncode == 1, done.stderr
    assert (setup.warm_pid(), setup.warm_pid(other_install)) == (ours, theirs)
    assert eventually(
        lambda: (setup.served(), setup.served(other_install)) == (counts[0] + 2, counts[1] + 2)
    )
    status = subprocess.run(
        [sys.executable, "-m", "flows.cli", "server", "status"], env=setup.env(),
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"warm review process: pid {ours} " in status
    assert f"also running: a warm review process of {sys.executable} (code in " in status
    assert f"pid {theirs}\n" in status


@pytest.mark.stress  # ~16 s: a reinstall under a running warm process
def test_an_upgrade_in_place_is_never_served_by_the_old_code(
    setup: Setup, other_install: Install, tmp_path: Path
) -> None:
    """Our source edited in place, then a dependency replaced file by file as an installer
    does: each time the warm process refuses the next hand-over and exits, the review runs the
    new code in the CLI process and starts a warm process of the new code; each old process's
    log is kept."""
    assert other_install.pythonpath is not None
    code = Path(other_install.pythonpath.split(os.pathsep)[0])
    old = setup.ensure_warm(other_install)
    old_log = _log_path(setup, other_install)
    console = code / "reviewflow" / "report" / "console.py"
    text = console.read_text().replace('("Review ", "bold")', '("Upgraded review ", "bold")')
    console.write_text(text)
    done = setup.review(tmp_path, install=other_install)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("Upgraded review ")  # the new code
    assert _gone(old, within=30.0)
    assert f"the code changed since this process started ({console})" in old_log.read_text()
    newer = setup.wait_warm(other_install)
    newer_log = _log_path(setup, other_install)
    served = setup.served(other_install)
    assert setup.review(tmp_path, install=other_install).stdout.startswith("Upgraded review ")
    assert eventually(lambda: setup.served(other_install) == served + 1)  # handed over
    module = code.parent / "deps" / "jinja2" / "utils.py"
    upgraded = module.with_name("utils.py.new")
    upgraded.write_text(module.read_text() + "\n# 3.1.7\n")
    upgraded.replace(module)  # what an installer does: a new file in place of the old
    assert setup.review(tmp_path, install=other_install).returncode == 1
    assert _gone(newer, within=30.0)
    assert f"the code changed since this process started ({module.parent})" in (
        newer_log.read_text()
    )
    assert old_log.exists() and newer_log != old_log  # one log per warm process, kept


def test_ci_runs_neither_use_nor_start_a_warm_process(setup: Setup, tmp_path: Path) -> None:
    # here, where the tests before left our warm process running: `ensure_warm` starts none
    setup.ensure_warm()
    warm.stop_warm(setup.phome, setup.here.key)
    server = read_state(setup.phome)
    done = setup.review(tmp_path, "--report-dir", "out", CI="true")
    assert done.returncode == 1, done.stderr
    assert setup.warm_pid() is None
    assert setup.state() is None
    assert read_state(setup.phome) == server  # the server it did not start is kept


def _log_path(setup: Setup, install: Install) -> Path:
    state = setup.state(install)
    assert state is not None
    return Path(state.log)


def test_a_socket_path_too_long_turns_the_warm_path_off_with_one_note(
    setup: Setup, tmp_path: Path
) -> None:
    """No start on every review: the first says why once, the next ones run in the CLI."""
    warm.stop_warm(setup.phome, setup.here.key)
    deep = setup.runtime / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, exist_ok=True)
    try:
        first = setup.review(tmp_path, XDG_RUNTIME_DIR=str(deep))
        second = setup.review(tmp_path, XDG_RUNTIME_DIR=str(deep))
        state = setup.state()
    finally:
        warm.stop_warm(setup.phome, setup.here.key)  # forgets the `off` record too
    assert (first.returncode, second.returncode) == (1, 1)
    path = deep / f"reviewflow-{os.getuid()}" / Path(state.socket if state else "").name
    size = len(os.fsencode(path))
    assert without_estimate(first.stderr).removeprefix(PREPARING_NOTE) == warm_client.NOTE.format(
        what=warm_client.off_message(
            f"the socket path {path} is {size} bytes, over the 107 a Unix socket allows (set "
            "XDG_RUNTIME_DIR or TMPDIR to a shorter directory)"
        )
    )
    assert without_estimate(second.stderr) == ""
    assert state is not None and state.off and state.pid == 0  # no process was started


@pytest.mark.stress  # one of the warm path's refusals; `make test` keeps the socket path too long
def test_a_socket_it_cannot_listen_on_turns_the_warm_path_off_with_one_note(
    setup: Setup, tmp_path: Path
) -> None:
    """The warm process itself fails to listen (a directory is in the way): it records why and
    exits; the next review says so once, no review starts another."""
    warm.stop_warm(setup.phome, setup.here.key)
    sock = socket_path(setup.env(), setup.phome, setup.here.key)
    sock.parent.mkdir(mode=0o700, exist_ok=True)
    sock.mkdir()
    try:
        assert setup.review(tmp_path).returncode == 1  # starts one, which cannot listen
        assert eventually(lambda: (s := setup.state()) is not None and bool(s.off), within=240)
        noted = setup.review(tmp_path)
        quiet = setup.review(tmp_path)
        state = setup.state()
    finally:
        warm.stop_warm(setup.phome, setup.here.key)
        sock.rmdir()
    assert without_estimate(noted.stderr) == warm_client.NOTE.format(
        what=warm_client.off_message(f"cannot listen on {sock} (Is a directory)")
    )
    assert without_estimate(quiet.stderr) == "" and quiet.returncode == 1
    assert state is not None and state.noted and setup.warm_pid() is None


def test_a_ci_run_that_started_its_server_stops_it_quietly(setup: Setup, tmp_path: Path) -> None:
    stop_server(setup.home)
    done = setup.review(tmp_path, "--report-dir", "out", CI="true")
    assert done.returncode == 1, done.stderr
    # Prefect's workers sent what they held before the server stopped, not at exit.
    assert "Error logging to API" not in done.stderr
    assert (
        without_estimate(done.stderr).removeprefix(PREPARING_NOTE) == ""
    )  # the note: when it runs alone
    assert read_state(setup.phome) is None and setup.warm_pid() is None


def test_server_stop_stops_the_warm_process(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = setup.ensure_warm()
    state = setup.state()
    assert state is not None
    monkeypatch.setenv("REVIEWFLOW_HOME", str(setup.home))
    assert main(["server", "status"]) == 0
    assert f"warm review process: pid {pid} (log: {state.log})\n" in capsys.readouterr().out
    assert main(["server", "stop"]) == 0
    assert f"stopped the warm review process (pid {pid})\n" in capsys.readouterr().out
    assert _gone(pid, within=1.0)
    assert not Path(state.socket).exists()
    assert main(["server", "status"]) == 0
    assert (
        capsys.readouterr().out == f"not running (Prefect home: {setup.phome})\nno warm process\n"
    )
