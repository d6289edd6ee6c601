"""`--sast` finds the semgrep `make dev` installed: `$(VENV)-sast` beside the running
environment (`.venv-sast` beside `.venv`), with nothing on PATH and nothing configured."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from reviewflow.errors import SastError
from reviewflow.sast.semgrep import locate
from tests.gitutil import GitRepo

NO_SEMGREP_PATH = "/usr/bin:/bin"  # git is there, semgrep is not (checked below)


def _make_dev_layout(root: Path, semgrep: str) -> Path:
    """`root/.venv` (a real environment that imports this reviewflow) and `root/.venv-sast`
    holding semgrep, as `make dev` leaves a checkout; the `.venv`'s Python."""
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv)})["purelib"])
    ours = sysconfig.get_paths()["purelib"]  # this environment: reviewflow, editable
    (purelib / "reviewflow-under-test.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    sast_bin = root / ".venv-sast" / "bin"
    sast_bin.mkdir(parents=True)
    (sast_bin / "semgrep").symlink_to(semgrep)
    return venv / "bin" / "python"


def test_review_sast_finds_make_devs_sast_environment(
    tmp_path: Path, semgrep: str, shell_change: GitRepo
) -> None:
    python = _make_dev_layout(tmp_path / "checkout", semgrep)
    assert not any((Path(d) / "semgrep").exists() for d in NO_SEMGREP_PATH.split(":"))
    env = {**os.environ, "PATH": NO_SEMGREP_PATH}
    result = subprocess.run(
        [str(python), "-m", "flows.cli", "review", "--preview", "--sast", "--commit", "HEAD"],
        cwd=shell_change.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "SAST pre-scan (semgrep 1.185.0, rules: bundled)" in result.stdout
    assert "not installed" not in result.stderr


def test_the_message_names_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    python = tmp_path / "checkout" / ".venv" / "bin" / "python"
    with pytest.raises(SastError) as refused:
        locate(None, python=str(python))
    looked = f"{python.parent / 'semgrep'}, {tmp_path / 'checkout' / '.venv-sast/bin/semgrep'}"
    assert f"semgrep is not installed (not at {looked}, not on PATH)" in str(refused.value)
