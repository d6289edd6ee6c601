"""Files over `review.max_file_bytes` are left out as `too_large` in every mode, through the CLI."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flows.cli.main import main
from reviewflow.config import Config
from tests.gitutil import GitRepo

_MIB = 1 << 20
BIG = "x = '" + "a" * (2 * _MIB) + "'\n"  # one 2 MiB line of Python


def preview(repo: GitRepo, tmp_path: Path, *flags: str) -> dict[str, Any]:
    out = tmp_path / "preview.json"
    code = main(["review", "--preview", "--repo", str(repo.root), "--json", str(out), *flags])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def reasons(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {e["path"]: (e["reason"], e["detail"]) for e in doc["excluded_files"]}


@pytest.fixture
def big_commit(repo: GitRepo) -> tuple[GitRepo, str]:
    repo.write("small.py", "x = 1\n")
    repo.commit("base")
    repo.write("big.py", BIG)
    repo.write("small.py", "x = 2\n")
    return repo, repo.commit("big")


def test_default_limit_is_one_mib() -> None:
    assert Config().review.max_file_bytes == _MIB


def test_committed_big_file_is_too_large(big_commit: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, sha = big_commit
    for flags in (["--commit", sha], ["--from", f"{sha}~1", "--to", sha]):
        doc = preview(repo, tmp_path, *flags)
        assert [f["path"] for f in doc["files"]] == ["small.py"]
        reason, detail = reasons(doc)["big.py"]
        assert reason == "too_large"
        assert detail == "2.0 MiB of diff text, limit 1.0 MiB (review.max_file_bytes)"


def test_untracked_and_staged_big_files_are_too_large(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("small.py", "x = 1\n")
    repo.commit("base")
    repo.write("big.py", BIG)  # untracked, read
    repo.write("staged.py", BIG)
    repo.git("add", "staged.py")
    huge = repo.write("huge.py", "x = 1\n")  # untracked, over the read limit: never read
    os.truncate(huge, 20 * _MIB)
    found = reasons(preview(repo, tmp_path))
    assert found["big.py"][0] == found["staged.py"][0] == "too_large"
    assert found["huge.py"] == (
        "too_large",
        "20.0 MiB file not read, limit 1.0 MiB (review.max_file_bytes)",
    )


def test_diff_on_stdin_is_too_large(
    big_commit: tuple[GitRepo, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, sha = big_commit
    diff = repo.git("show", "--format=", sha).encode()
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(buffer=io.BytesIO(diff)))
    assert reasons(preview(repo, tmp_path, "--diff", "-"))["big.py"][0] == "too_large"


def test_limit_from_flag_and_config(
    big_commit: tuple[GitRepo, str], tmp_path: Path, rf_home: Path
) -> None:
    repo, sha = big_commit
    raised = preview(repo, tmp_path, "--commit", sha, "--max-file-bytes", str(4 * _MIB))
    assert sorted(f["path"] for f in raised["files"]) == ["big.py", "small.py"]
    assert main(["config", "set", "review.max_file_bytes", str(4 * _MIB)]) == 0
    assert len(preview(repo, tmp_path, "--commit", sha)["files"]) == 2
    lowered = preview(repo, tmp_path, "--commit", sha, "--max-file-bytes", "1024")  # flag wins
    assert [f["path"] for f in lowered["files"]] == ["small.py"]
    assert reasons(lowered)["big.py"][0] == "too_large"


def test_include_does_not_bypass_the_limit(big_commit: tuple[GitRepo, str], tmp_path: Path) -> None:
    repo, sha = big_commit
    (repo.root / ".reviewflow").mkdir()
    (repo.root / ".reviewflow/rules.json").write_text('{"include": ["big.py"]}')
    assert reasons(preview(repo, tmp_path, "--commit", sha))["big.py"][0] == "too_large"
