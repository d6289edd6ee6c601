"""The semgrep the SAST tests run: the project's pinned one (`make dev` installs it into its
own environment, `$(VENV)-sast`, since its dependencies conflict with Prefect's)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from reviewflow.config import ReviewSettings
from tests.gitutil import GitRepo

ROOT = Path(__file__).resolve().parents[2]


def find_semgrep() -> str | None:
    """The pinned semgrep: beside this Python, in `<venv>-sast` or `.venv-sast`, or on PATH."""
    candidates = [
        Path(sys.executable).parent / "semgrep",
        Path(sys.prefix + "-sast") / "bin" / "semgrep",
        ROOT / ".venv-sast" / "bin" / "semgrep",
    ]
    found = next((str(path) for path in candidates if path.is_file()), None)
    return found or shutil.which("semgrep")


@pytest.fixture(scope="session")
def semgrep() -> str:
    found = find_semgrep()
    if found is None:
        pytest.fail("semgrep is not installed: `make dev` installs the pinned one (.venv-sast)")
    return found


@pytest.fixture
def sast_settings(semgrep: str) -> ReviewSettings:
    return ReviewSettings(sast=True, sast_semgrep=semgrep)


@pytest.fixture
def shell_change(repo: GitRepo) -> GitRepo:
    """A commit adding a shell=True call next to an older os.system call it leaves as is."""
    repo.write("app/run.py", 'import os\n\n\ndef old(x):\n    os.system("ls " + x)\n')
    repo.commit("base")
    repo.write(
        "app/run.py",
        'import os\nimport subprocess\n\n\ndef old(x):\n    os.system("ls " + x)\n\n\n'
        "def new(cmd):\n    return subprocess.run(cmd, shell=True)\n",
    )
    repo.write("web/page.js", "export function show(el, html) {\n  el.innerHTML = html;\n}\n")
    repo.commit("add new()")
    return repo
