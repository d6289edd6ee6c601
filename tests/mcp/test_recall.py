"""What `reviewflow mcp`'s `findings` and `explain` read back (`reviewflow.report.recall`) and
the event lines `review --events` writes (`reviewflow.report.events`), in process: the newest
report of the repository, a finding by ID or fingerprint with its rule and placement, and each
bad case as one `ConfigError` line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from reviewflow.errors import ConfigError
from reviewflow.report.events import parse_event, progress_event, written_event
from reviewflow.report.location import flatten_repo_path, reports_root
from reviewflow.report.progress import ProgressState
from reviewflow.report.recall import explanation, last_report, read_report

FINGERPRINT = "ab" * 32
FINDING = {
    "id": "F" + FINGERPRINT[:12],
    "fingerprint": FINGERPRINT,
    "path": "app/fast.py",
    "start_line": 2,
    "end_line": 2,
    "placed_by": "exact",
    "existing_code": "return open('x').read()",
    "evidence": "the file is never closed",
}
RULE = {"name": "python", "path": "**/*.py", "files": ["app/fast.py"]}


def _report(home: Path, repo: Path, name: str, findings: list[dict[str, Any]], at: int) -> Path:
    folder = reports_root(home) / flatten_repo_path(repo) / name
    folder.mkdir(parents=True)
    path = folder / "review-report.json"
    path.write_text(json.dumps({"findings": findings, "rules": [RULE]}))
    os.utime(path, (at, at))
    return path


def test_the_newest_report_and_one_finding_explained(rf_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _report(rf_home, repo, "20261207T000000Z-old", [], at=1_000)
    newest = _report(rf_home, repo, "20261207T010000Z-new", [FINDING], at=2_000)
    assert last_report(rf_home, repo) == newest
    report = read_report(newest)
    for key in ("F" + FINGERPRINT[:12], FINGERPRINT.upper()):
        explained = explanation(report, key, newest)
        assert explained["evidence"] == FINDING["evidence"]
        assert explained["rule"] == {"name": "python", "path": "**/*.py"}
        assert explained["placement"]["placed_by"] == "exact"
        assert "verbatim" in explained["placement"]["meaning"]
        assert explained["report"] == str(newest)


def test_each_bad_case_is_one_line(rf_home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    with pytest.raises(ConfigError, match=r"no review of .* has a report in .*: review it first"):
        last_report(rf_home, repo)
    path = _report(rf_home, repo, "r", [FINDING], at=1_000)
    with pytest.raises(ConfigError, match="is not in the last review's report"):
        explanation(read_report(path), "F" + "0" * 12, path)
    with pytest.raises(ConfigError, match="neither a finding ID"):
        explanation(read_report(path), "not-a-finding", path)
    path.write_text("{")
    with pytest.raises(ConfigError, match="not a JSON report"):
        read_report(path)
    path.write_text("[]")
    with pytest.raises(ConfigError, match="no findings list"):
        read_report(path)


def test_events_round_trip_and_other_lines_are_text() -> None:
    state = ProgressState(files_total=2, files_done=1, requests=3, current=("app/slow.py",))
    progress = parse_event(progress_event(state).rstrip("\n"))
    assert progress is not None and progress["event"] == "progress"
    assert (progress["files_done"], progress["current"]) == (1, ["app/slow.py"])
    written = parse_event(written_event(130, {"json": "/r/review-report.json"}))
    assert written == {
        "event": "written",
        "exit_code": 130,
        "reports": {"json": "/r/review-report.json"},
    }
    assert parse_event("reviewflow: error: unknown revision 'x'") is None
    assert parse_event("reviewflow-event: {not json") is None
    assert parse_event('reviewflow-event: {"no": "kind"}') is None
