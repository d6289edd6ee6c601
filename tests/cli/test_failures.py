"""Exit 1 means a finding and nothing else: Prefect down, a server that never starts and a bug
of ours are exit 2 with one line naming cause and fix, the traceback in the log file.

These run the CLI as a user does, in a subprocess (each starts Prefect: kept few)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flows.local.settings import prefect_home
from tests.gitutil import GitRepo

ROOT = Path(__file__).resolve().parents[2]
# A hang guard, not a measurement: an unreachable API must not sit in long client timeouts.
HANG_GUARD_SECONDS = 120

INJECT = """\
import netguard

netguard.install()

import reviewflow.git.identity as identity

_identity = identity.snapshot_identity


def snapshot_identity(*args, **kwargs):
    context = sys.modules.get("prefect.context")
    if context is not None and context.TaskRunContext.get() is not None:
        raise ValueError("injected failure in identify_snapshot")
    return _identity(*args, **kwargs)


identity.snapshot_identity = snapshot_identity
"""


@pytest.fixture
def changed(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    return repo


def run_cli(
    repo: GitRepo, env_update: dict[str, str], *flags: str, inject: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PREFECT_API_URL", None)
    env.update(
        REVIEWFLOW_MODEL_NAME="test-model", REVIEWFLOW_MODEL_ENDPOINT="http://127.0.0.1:9/v1"
    )
    env.update(env_update)
    paths = [str(ROOT), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join([str(inject), *paths] if inject else paths)
    return subprocess.run(
        [sys.executable, "-m", "flows.review", "--repo", str(repo.root), *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=HANG_GUARD_SECONDS,
        check=False,
    )


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.endswith("\n")
    return done.stderr.splitlines()[-1]


def logged_traceback(line: str) -> str:
    found = re.search(r"\(details: (\S+)\)$", line)
    assert found, line
    text = Path(found.group(1)).read_text()
    assert "Traceback (most recent call last)" in text
    return text


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_api_url(changed: GitRepo, rf_home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/api"
    done = run_cli(changed, {"PREFECT_API_URL": url})
    line = last_line(done)
    assert "Traceback" not in done.stderr
    assert line.startswith(f"reviewflow: error: cannot reach the Prefect API at {url}")
    assert "unset PREFECT_API_URL" in line
    assert str(rf_home / "logs") in line
    assert "Failed to reach API" in logged_traceback(line)


def test_local_server_that_cannot_start(changed: GitRepo, rf_home: Path) -> None:
    (rf_home / "prefect").write_text("not a directory")  # where its Prefect home would be
    done = run_cli(changed, {})
    line = last_line(done)
    assert "Traceback" not in done.stderr
    assert line.startswith(
        f"reviewflow: error: cannot use {prefect_home(rf_home)} as the local Prefect server's home"
    )


@pytest.mark.usefixtures("prefect_harness")
def test_exception_inside_a_task_is_an_internal_error(changed: GitRepo, tmp_path: Path) -> None:
    from prefect.settings import PREFECT_API_URL

    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text("import sys\n" + INJECT)
    api = {"PREFECT_API_URL": str(PREFECT_API_URL.value())}

    quiet = run_cli(changed, api, inject=inject)
    line = last_line(quiet)
    assert "Traceback" not in quiet.stderr
    assert re.fullmatch(
        r"reviewflow: error: internal error: ValueError: injected failure in identify_snapshot "
        r"\(details: \S+\.log\)",
        line,
    )
    assert "identify_snapshot" in logged_traceback(line)


def test_verbose_prints_the_traceback_too(
    changed: GitRepo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli.main import main
    from reviewflow.select import scope

    def broken(*args: object) -> None:
        raise ValueError("injected")

    monkeypatch.setattr(scope, "select", broken)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", "http://127.0.0.1:9/v1")
    assert main(["review", "--repo", str(changed.root), "--verbose"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last)")
    last = err.splitlines()[-1]
    assert last.startswith("reviewflow: error: internal error: ValueError: injected (details: ")
    assert "raise ValueError" in logged_traceback(last)


def test_a_bug_outside_prefect_is_an_internal_error(
    repo: GitRepo,
    rf_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.cli.main import main
    from reviewflow.report import rulecheck

    def broken(*args: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(rulecheck, "check_path", broken)
    assert main(["rules", "check", "a.py", "--repo", str(repo.root)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = captured.err.removesuffix("\n")
    assert "\n" not in line
    assert line.startswith("reviewflow: error: internal error: KeyError: 'boom' (details: ")
    assert str(rf_home / "logs") in line
    assert "KeyError: 'boom'" in logged_traceback(line)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            RuntimeError("Timed out while attempting to connect to ephemeral Prefect API server."),
            "the local Prefect server did not start within 90 s: run the command again",
        ),
        (
            RuntimeError("Failed to reach API at http://10.0.0.1:4200/api/."),
            "cannot reach the Prefect API at http://10.0.0.1:4200/api/ (PREFECT_API_URL)",
        ),
        (ValueError(""), "internal error: ValueError (details: "),
    ],
)
def test_failure_lines(exc: Exception, expected: str, tmp_path: Path) -> None:
    from flows.cli.failures import describe_failure

    line = describe_failure(exc, {}, tmp_path / "x.log")
    assert line.startswith(expected) and line.endswith(f"(details: {tmp_path / 'x.log'})")


def test_a_wrapped_prefect_failure_is_still_recognised(tmp_path: Path) -> None:
    from flows.cli.failures import describe_failure

    try:
        try:
            raise RuntimeError("Failed to reach API at http://127.0.0.1:1/api/")
        except RuntimeError as inner:
            raise ValueError("flow run failed") from inner
    except ValueError as outer:
        line = describe_failure(outer, {}, tmp_path / "x.log")
    assert line.startswith("cannot reach the Prefect API at http://127.0.0.1:1/api/")


def test_old_run_logs_are_pruned(tmp_path: Path) -> None:
    from flows.cli.failures import KEEP_LOGS, prune_logs

    now = 2_000_000_000.0
    for n in range(KEEP_LOGS + 5):
        log = tmp_path / f"reviewflow-{n:04d}.log"
        log.write_text("x")
        os.utime(log, (now - n, now - n))  # n = 0 is the newest
    stale = tmp_path / "reviewflow-stale.log"
    stale.write_text("x")
    os.utime(stale, (now - 31 * 86400,) * 2)
    (tmp_path / "notes.txt").write_text("not ours")
    prune_logs(tmp_path, now=now)
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == ["notes.txt", *(f"reviewflow-{n:04d}.log" for n in range(KEEP_LOGS))]
    prune_logs(tmp_path / "missing", now=now)  # no log folder yet: nothing to do
