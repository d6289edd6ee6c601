"""The pre-scan the CLI starts ahead of the flow (`reviewflow.sast.early`): the flow's stage
waits for it and reads its results, a cancel stops its semgrep, and the version check runs
once per installed semgrep."""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from reviewflow.errors import SastError
from reviewflow.sast.cache import SastCache
from reviewflow.sast.early import EarlyScan
from reviewflow.sast.scan import prescan, verify_semgrep
from reviewflow.sast.semgrep import Semgrep
from tests.gitutil import GitRepo
from tests.sast.test_prescan import scope_of


def counting_semgrep(tmp_path: Path, body: str) -> tuple[Path, Path]:
    """A semgrep wrapper that logs its first argument (`scan`, `--experimental`) to a file."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "semgrep"
    wrapper.write_text(f'#!/bin/sh\necho "$1" >> {log}\n{body}\n')
    wrapper.chmod(0o755)
    return wrapper, log


def calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_the_flows_stage_waits_for_the_early_scan_and_reads_its_results(
    shell_change: GitRepo, semgrep: str, tmp_path: Path
) -> None:
    wrapper, log = counting_semgrep(tmp_path, f'exec {semgrep} "$@"')
    settings = ReviewSettings(sast=True, sast_semgrep=str(wrapper))
    scope, home = scope_of(shell_change, commit="HEAD"), str(tmp_path / "home")
    stage: list[object] = []

    with EarlyScan(scope, settings, home, refresh=True) as early:
        # The stage, as the flow runs it while the early scan may still be going.
        waiter = threading.Thread(target=lambda: stage.append(prescan(scope, settings, home)))
        waiter.start()
        waiter.join()
    assert early.error is None
    [scan] = stage
    assert scan.files == 2 and scan.reused == 2  # nothing scanned twice
    assert set(scan.results) == {"app/run.py", "web/page.js"}
    assert calls(log).count("scan") == 1


def test_a_cancel_stops_the_early_scans_semgrep_and_leaves_no_folder_behind(
    shell_change: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = tmp_path / "started"
    wrapper, _ = counting_semgrep(
        tmp_path,
        f'case "$*" in *--version*) echo 1.185.0; exit 0;; esac\ntouch {started}\nexec sleep 60',
    )
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    settings = ReviewSettings(sast=True, sast_semgrep=str(wrapper))
    scope = scope_of(shell_change, commit="HEAD")

    early = EarlyScan(scope, settings, str(tmp_path / "home"), refresh=False)
    with pytest.raises(KeyboardInterrupt), early:
        while not started.exists():
            threading.Event().wait(0.01)
        raise KeyboardInterrupt
    assert not early._thread.is_alive()  # joined: semgrep was killed, not waited for
    assert early.error is not None and "exit -9" in str(early.error)
    assert os.listdir(scratch) == []  # the scan's private folder is gone


def test_the_version_check_runs_once_per_installed_semgrep(tmp_path: Path) -> None:
    wrapper, log = counting_semgrep(tmp_path, "echo 1.185.0")
    cache = SastCache(tmp_path / "home")
    for _ in range(3):
        verify_semgrep(Semgrep(str(wrapper)), cache)
    assert calls(log) == ["--experimental"]

    wrapper.write_text(wrapper.read_text() + "\n")  # reinstalled: another file
    verify_semgrep(Semgrep(str(wrapper)), cache)
    assert calls(log) == ["--experimental", "--experimental"]


def test_another_semgrep_version_is_refused_before_the_thread_starts(
    shell_change: GitRepo, tmp_path: Path
) -> None:
    wrapper, log = counting_semgrep(tmp_path, "echo 1.2.3")
    settings = ReviewSettings(sast=True, sast_semgrep=str(wrapper))
    with pytest.raises(SastError, match=r"semgrep 1\.2\.3 is installed"):
        EarlyScan(scope_of(shell_change, commit="HEAD"), settings, str(tmp_path / "h"), False)
    assert calls(log) == ["--experimental"]  # the version check only, no scan
