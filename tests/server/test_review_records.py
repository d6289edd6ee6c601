"""Review records: a review killed outright is forgotten, and one that cannot record itself
says so (the review goes on)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flows.local.reviews import ReviewRecord, process_start, reviews_dir, running_reviews


def _record_of(phome: Path, process: subprocess.Popen[bytes], start: str | None = None) -> Path:
    path = reviews_dir(phome) / f"{process.pid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "pid": process.pid,
        "process_start": start or process_start(process.pid),
        "repository": "/repo",
        "started_at": 0.0,
    }
    path.write_text(json.dumps(record))
    return path


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_a_review_killed_outright_is_forgotten_when_the_next_review_records_itself(
    tmp_path: Path,
) -> None:
    killed, alive = _sleeper(), _sleeper()
    try:
        stale, live = _record_of(tmp_path, killed), _record_of(tmp_path, alive)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        with ReviewRecord(tmp_path, "/repo") as mine:
            assert mine.path is not None and mine.path.exists()
            assert not stale.exists() and live.exists()
    finally:
        alive.kill()
        alive.wait()


def test_a_reused_pid_is_not_taken_for_the_review(tmp_path: Path) -> None:
    other = _sleeper()
    try:
        record = _record_of(tmp_path, other, start="1")  # the pid's process started at another time
        assert running_reviews(tmp_path) == [] and not record.exists()
    finally:
        other.kill()
        other.wait()


def test_a_review_that_cannot_record_itself_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reviews_dir(tmp_path).write_text("not a folder")
    with ReviewRecord(tmp_path, "/repo") as mine:
        assert mine.path is None
    assert capsys.readouterr().err.count("reviewflow: warning: cannot record this review") == 1
