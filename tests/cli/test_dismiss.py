"""`reviewflow dismiss`, `dismiss --undo` and `dismissed`: IDs from the reports, the repository's
file and the home's, one-line errors that write nothing."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.git.repo import find_repo_root
from reviewflow.report.location import flatten_repo_path
from tests.gitutil import GitRepo

FP_LEAK = "3a9c0d1e2f3a" + "4" * 52
FP_SQL = "77aa00bb11cc" + "5" * 52
FP_OLD = "0123456789ab" + "6" * 52


def _report(path: Path, *findings: tuple[str, str, str]) -> Path:
    items = [
        {"id": "F" + fp[:12], "fingerprint": fp, "path": where, "title": title}
        for fp, where, title in findings
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": "1", "findings": items}))
    return path


@pytest.fixture
def reviewed(repo: GitRepo, rf_home: Path) -> GitRepo:
    """A repository with two reports of it in the home (the newer one holds FP_LEAK)."""
    repo.write("app.py", "x = 1\n")
    repo.commit("base")
    folder = rf_home / "reports" / flatten_repo_path(find_repo_root(repo.root))
    older = _report(
        folder / "20261130T100000Z-aa" / "review-report.json", (FP_OLD, "old.py", "Old")
    )
    os.utime(older, (1_000_000_000, 1_000_000_000))
    _report(folder / "20261201T100000Z-bb" / "review-report.json", (FP_LEAK, "app.py", "Leak"))
    return repo


def _run(repo: GitRepo, *args: str) -> int:
    return main([*args, "--repo", str(repo.root)])


def test_dismiss_list_and_undo_in_the_repository(
    reviewed: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(reviewed, "dismiss", "F3a9c0d1e2f3a", "--reason", "a test\nfixture") == 0
    assert capsys.readouterr().out == (
        'dismissed F3a9c0d1e2f3a "Leak" (app.py) in .reviewflow/dismissed.json '
        "(commit it to share the dismissal)\n"
    )
    assert _run(reviewed, "dismiss", "f0123456789AB") == 0  # an older report's ID, any case
    assert _run(reviewed, "dismiss", FP_SQL) == 0  # a fingerprint no report holds
    capsys.readouterr()
    saved = reviewed.root / ".reviewflow" / "dismissed.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o644  # committed and shared
    data = json.loads(saved.read_text())
    assert data["version"] == 1
    entries = data["dismissed"]
    assert [(e["path"], e["fingerprint"]) for e in entries] == [
        ("", FP_SQL),
        ("app.py", FP_LEAK),
        ("old.py", FP_OLD),
    ]
    leak = entries[1]
    assert list(leak) == ["fingerprint", "id", "path", "title", "reason", "by", "at"]
    assert (leak["reason"], leak["by"]) == ("a test fixture", "Test <test@example.invalid>")
    assert leak["at"].endswith("Z") and leak["id"] == "F3a9c0d1e2f3a"

    assert _run(reviewed, "dismissed") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[1].startswith('F3a9c0d1e2f3a "Leak" (app.py) by Test <test@example.invalid> on ')
    assert lines[1].endswith(": a test fixture  [.reviewflow/dismissed.json]")

    assert _run(reviewed, "dismiss", "--undo", "F3a9c0d1e2f3a") == 0
    assert "removed the dismissal of F3a9c0d1e2f3a" in capsys.readouterr().out
    assert _run(reviewed, "dismiss", "--undo", FP_SQL) == 0
    kept = json.loads(saved.read_text())["dismissed"]
    assert [e["fingerprint"] for e in kept] == [FP_OLD]


def test_local_dismissals_live_in_the_home_for_this_repository(
    reviewed: GitRepo, rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(reviewed, "dismiss", "F3a9c0d1e2f3a", "--local") == 0
    assert not (reviewed.root / ".reviewflow").exists()
    mine = rf_home / "dismissed.json"
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    entry = json.loads(mine.read_text())["dismissed"][0]
    assert entry["repository"] == str(find_repo_root(reviewed.root))
    capsys.readouterr()
    assert _run(reviewed, "dismissed", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(e["fingerprint"], e["local"], e["file"]) for e in listed] == [
        (FP_LEAK, True, str(mine))
    ]
    assert _run(reviewed, "dismiss", "--undo", "F3a9c0d1e2f3a") == 2  # not in the repository's
    assert "no dismissal of F3a9c0d1e2f3a in .reviewflow/dismissed.json" in capsys.readouterr().err
    assert _run(reviewed, "dismiss", "--undo", "F3a9c0d1e2f3a", "--local") == 0
    assert json.loads(mine.read_text())["dismissed"] == []


def test_an_id_from_a_report_file(reviewed: GitRepo, tmp_path: Path) -> None:
    report = _report(tmp_path / "ci-report.json", (FP_SQL, "db.py", "SQL injection"))
    assert _run(reviewed, "dismiss", "F77aa00bb11cc", "--report", str(report)) == 0
    saved = json.loads((reviewed.root / ".reviewflow" / "dismissed.json").read_text())
    assert saved["dismissed"][0]["title"] == "SQL injection"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["dismiss", "nonsense"],
            "'nonsense' is neither a finding ID (F and 12 hex digits, as reports show it) nor a "
            "fingerprint (64 hex digits)",
        ),
        (["dismiss", "Fffffffffffff"], "finding Fffffffffffff is in none of this repository's 2 "),
        (["dismiss", "F3a9c0d1e2f3a", "--report", "/nonexistent/r.json"], "cannot read report "),
        (["dismiss", "F3a9c0d1e2f3a", "--reason", "x" * 501], "--reason is 501 characters"),
        (["dismiss", "--undo", "F3a9c0d1e2f3a"], "no dismissal of F3a9c0d1e2f3a in "),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    reviewed: GitRepo, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(reviewed, *args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"reviewflow: error: {message}")
    assert not (reviewed.root / ".reviewflow").exists()


def test_a_broken_file_is_named_and_left_as_it_is(
    reviewed: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = reviewed.write(".reviewflow/dismissed.json", '{"version": 2, "dismissed": []}')
    assert _run(reviewed, "dismiss", FP_SQL) == 2
    assert capsys.readouterr().err == (
        f"reviewflow: error: invalid dismissals file {broken}: version 2 (this reviewflow reads "
        "version 1)\n"
    )
    assert broken.read_text() == '{"version": 2, "dismissed": []}'
    assert _run(reviewed, "dismissed") == 2


def test_without_a_git_identity_the_os_user_is_recorded_and_listed(
    reviewed: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bare = tmp_path / "no-identity.gitconfig"
    bare.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(bare))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, "ci-runner")
    assert _run(reviewed, "dismiss", "F3a9c0d1e2f3a", "--reason", "fixture key") == 0
    saved = json.loads((reviewed.root / ".reviewflow" / "dismissed.json").read_text())
    assert [e["by"] for e in saved["dismissed"]] == ["ci-runner"]
    capsys.readouterr()

    assert _run(reviewed, "dismissed") == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith('F3a9c0d1e2f3a "Leak" (app.py) by ci-runner on 20')
    assert line.endswith(": fixture key  [.reviewflow/dismissed.json]")
    assert _run(reviewed, "dismissed", "--json") == 0
    (record,) = json.loads(capsys.readouterr().out)
    assert (record["by"], record["reason"]) == ("ci-runner", "fixture key")
    assert record["at"].endswith("Z")


def test_with_no_identity_and_a_blank_login_name_the_numeric_uid_is_recorded(
    reviewed: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A container user with no Git identity and no usable name (a blank `LOGNAME`, as a
    `docker run --user 1234` environment can leave it): `uid N`, never an empty `by`."""
    bare = tmp_path / "no-identity.gitconfig"
    bare.write_text("[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(bare))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, " ")
    assert _run(reviewed, "dismiss", "F3a9c0d1e2f3a", "--reason", "fixture key") == 0
    saved = json.loads((reviewed.root / ".reviewflow" / "dismissed.json").read_text())
    assert [e["by"] for e in saved["dismissed"]] == [f"uid {os.getuid()}"]
    capsys.readouterr()
    assert _run(reviewed, "dismissed") == 0
    assert f"(app.py) by uid {os.getuid()} on 20" in capsys.readouterr().out
