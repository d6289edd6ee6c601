"""Everything under the reviewflow home is the user's alone, whatever the umask: folders it
creates are 0700 (parents included), and a home left readable by others is tightened."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.fsutil import private_dirs, private_umask, write_output
from reviewflow.home import secure_home


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_every_folder_created_on_the_way_is_private(tmp_path: Path, usual_umask: None) -> None:
    private_dirs(tmp_path / "a" / "b" / "c")
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    write_output(tmp_path / "x" / "y" / "report.json", "{}")
    assert (_mode(tmp_path / "x"), _mode(tmp_path / "x" / "y")) == (0o700, 0o700)
    assert _mode(tmp_path / "x" / "y" / "report.json") == 0o600
    (tmp_path / "open").mkdir(mode=0o755)
    private_dirs(tmp_path / "open" / "d")  # an existing folder is the user's business
    assert (_mode(tmp_path / "open"), _mode(tmp_path / "open" / "d")) == (0o755, 0o700)


def test_what_the_process_creates_meanwhile_is_private(tmp_path: Path, usual_umask: None) -> None:
    with private_umask():
        (tmp_path / "f").write_text("source")
        (tmp_path / "d").mkdir()
    assert (_mode(tmp_path / "f"), _mode(tmp_path / "d")) == (0o600, 0o700)
    (tmp_path / "g").write_text("after")
    assert _mode(tmp_path / "g") == 0o644  # the umask is given back


def test_a_home_readable_by_others_is_tightened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for name in ("cache/results", "reports/repo", "logs", "prefect", "elsewhere"):
        (home / name).mkdir(parents=True)
        (home / name).chmod(0o755)
    home.chmod(0o755)
    (home / "cache").chmod(0o755)
    assert secure_home(home) == []
    tightened = ("", "cache", "cache/results", "reports", "logs", "prefect")
    assert [_mode(home / name) for name in tightened] == [0o700] * len(tightened)
    assert _mode(home / "elsewhere") == 0o755  # not reviewflow's data
    assert secure_home(tmp_path / "missing") == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")
def test_a_home_folder_of_another_user_is_named_not_touched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "logs").mkdir(parents=True)
    home.chmod(0o700)
    (home / "logs").chmod(0o755)
    os.chown(home / "logs", 65534, 65534)
    (note,) = secure_home(home)
    assert note == f"{home / 'logs'} belongs to another user and others can read it: not tightened"
    assert _mode(home / "logs") == 0o755


def test_the_cli_tightens_the_home_before_any_command(
    rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rf_home.chmod(0o755)
    assert main(["config", "path"]) == 0
    assert _mode(rf_home) == 0o700
    assert capsys.readouterr().err == ""
