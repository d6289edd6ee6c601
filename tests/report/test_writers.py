"""Report files: each one through write_output, 0600, relative paths inside the review's
directory, absolute ones as given, null/"" turns one off."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import jsonschema
import pytest

from reviewflow.config import OutputSettings
from reviewflow.report import writers
from reviewflow.report.writers import write_reports
from tests.report.samples import make_outcome, sarif_schema, validate_report


def test_default_reports_land_in_the_review_directory(tmp_path: Path) -> None:
    written, failure = write_reports(make_outcome(), OutputSettings(), tmp_path)
    assert failure is None
    assert written == {
        "json": str(tmp_path / "review-report.json"),
        "markdown": str(tmp_path / "review-report.md"),
        "sarif": str(tmp_path / "review-report.sarif"),
    }
    for path in written.values():
        assert stat.S_IMODE(Path(path).stat().st_mode) == 0o600
    validate_report(json.loads(Path(written["json"]).read_text("utf-8")))
    sarif = json.loads(Path(written["sarif"]).read_text("utf-8"))
    jsonschema.Draft4Validator(sarif_schema()).validate(sarif)
    assert Path(written["markdown"]).read_text("utf-8").startswith("# Code review report\n")


def test_off_absolute_and_gitlab(tmp_path: Path) -> None:
    absolute = tmp_path / "elsewhere" / "report.json"
    settings = OutputSettings(json=str(absolute), markdown=None, sarif="", gitlab="gl-cq.json")
    written, _ = write_reports(make_outcome(), settings, tmp_path / "dir")
    assert written == {"json": str(absolute), "gitlab": str(tmp_path / "dir" / "gl-cq.json")}
    issues = json.loads((tmp_path / "dir" / "gl-cq.json").read_text("utf-8"))
    assert len(issues) == 8
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == ["gl-cq.json"]


def test_every_file_goes_through_write_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = writers.write_output

    def spy(target: str | Path, data: bytes | str, mode: int = 0o600) -> None:
        calls.append(str(target))
        real(target, data, mode)

    monkeypatch.setattr(writers, "write_output", spy)
    written, _ = write_reports(make_outcome(), OutputSettings(gitlab="cq.json"), tmp_path)
    assert sorted(calls) == sorted(written.values()) and len(calls) == 4


def test_dash_writes_to_stdout(tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    settings = OutputSettings(json="-", markdown=None, sarif=None)
    assert write_reports(make_outcome(), settings, tmp_path) == ({"json": "-"}, None)
    validate_report(json.loads(capfdbinary.readouterr().out))


@pytest.mark.parametrize(
    ("settings", "needed"),
    [
        (OutputSettings(), True),
        (OutputSettings(json=None, markdown="", sarif=None), False),
        (OutputSettings(json="-", markdown=None, sarif="/abs/report.sarif"), False),
        (OutputSettings(json="-", markdown=None, sarif=None, gitlab="gl-cq.json"), True),
    ],
)
def test_the_review_directory_is_needed_only_for_a_relative_report(
    settings: OutputSettings, needed: bool
) -> None:
    assert writers.needs_directory(settings) is needed


def test_a_report_that_cannot_be_written_does_not_stop_the_others(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    settings = OutputSettings(json=str(blocker / "report.json"))  # its parent is a file
    written, message = write_reports(make_outcome(), settings, tmp_path / "dir")
    assert message is not None and sorted(written) == ["markdown", "sarif"]
    assert message.startswith(f"cannot write {blocker / 'report.json'}: ")
    assert "\n" not in message
    for name in ("review-report.md", "review-report.sarif"):  # the paid review is kept
        assert (tmp_path / "dir" / name).is_file()
        assert str(tmp_path / "dir" / name) in message
