"""Reports and config go where the user meant: symlinks followed, FIFOs and devices written in
place, directories refused, modes kept (one helper, `write_output`, for every writer)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.config import config_path
from reviewflow.errors import OutputError
from reviewflow.fsutil import write_output
from tests.gitutil import GitRepo


@pytest.fixture
def changed(repo: GitRepo) -> GitRepo:
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    repo.write("a.py", "x = 2\n")
    return repo


def preview(repo: GitRepo, target: str | Path) -> int:
    return main(["review", "--preview", "--repo", str(repo.root), "--json", str(target)])


def test_symlinked_report_keeps_its_link(changed: GitRepo, tmp_path: Path) -> None:
    real = tmp_path / "reports" / "real.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o644)
    link = tmp_path / "report.json"
    link.symlink_to(Path("reports") / "real.json")
    assert preview(changed, link) == 0
    assert link.is_symlink()
    assert json.loads(real.read_text())["kind"] == "preview"
    assert stat.S_IMODE(real.stat().st_mode) == 0o644  # an existing target keeps its mode


def test_dangling_symlink_creates_its_target(changed: GitRepo, tmp_path: Path) -> None:
    link = tmp_path / "report.json"
    link.symlink_to(tmp_path / "made.json")
    assert preview(changed, link) == 0
    assert link.is_symlink()
    made = tmp_path / "made.json"
    assert json.loads(made.read_text())["kind"] == "preview"
    assert stat.S_IMODE(made.stat().st_mode) == 0o600


def test_new_report_is_0600_and_parents_are_made(changed: GitRepo, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "dir" / "r.json"
    assert preview(changed, target) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_fifo_reader_gets_the_report(changed: GitRepo, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert preview(changed, fifo) == 0
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(received[0])["kind"] == "preview"


def test_dev_null_stays_a_device(changed: GitRepo) -> None:
    assert preview(changed, "/dev/null") == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dev_stdout_is_written_through_not_replaced(changed: GitRepo, tmp_path: Path) -> None:
    """`--json /dev/stdout > file`: the JSON reaches the shell's file, which stays the same file."""
    out = tmp_path / "captured.txt"
    with open(out, "wb") as handle:
        inode = os.fstat(handle.fileno()).st_ino
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "flows.cli",
                "review",
                "--preview",
                "--repo",
                str(changed.root),
                "--json",
                "/dev/stdout",
            ],
            stdout=handle,
            stderr=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2],
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_ino == inode
    text = out.read_text()
    assert '"kind": "preview"' in text
    assert "Reviewed files (1):" in text


def test_directory_is_a_one_line_error(
    changed: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert preview(changed, tmp_path) == 2
    err = capsys.readouterr().err
    assert err == f"reviewflow: error: cannot write {tmp_path}: is a directory\n"


def test_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_output("-", "hello\n")
    assert capsys.readouterr().out == "hello\n"


def test_unwritable_parent_is_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot write"):
        write_output(blocker / "r.json", "{}")


def test_config_set_follows_a_symlinked_config(
    rf_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dotfiles = tmp_path / "dotfiles" / "reviewflow.yaml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("review:\n  concurrency: 2\n")
    dotfiles.chmod(0o640)
    config_path(rf_home).symlink_to(dotfiles)
    assert main(["config", "set", "model.name", "gpt-4o"]) == 0
    assert config_path(rf_home).is_symlink()
    assert "name: gpt-4o" in dotfiles.read_text()
    assert "concurrency: 2" in dotfiles.read_text()
    assert stat.S_IMODE(dotfiles.stat().st_mode) == 0o640
