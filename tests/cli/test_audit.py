"""A whole-file audit through the CLI (`review --files PATH...`, `--all`) on real repositories:
what it covers (the rules' excludes, binary files), a big file chunked, bad paths as one line
and exit 2; and against the scripted model: a finding placed on a line of a file no change
touched, in every report, its fingerprint stable across runs and dismissed, a suppression
comment of the audited code honoured in CI; `--max-cost` refusing what it cannot pay."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, WireServer

STORE = '''"""A file store, committed long ago and never changed since."""


def read(path):
    return open(path).read()


def size(path):
    # reviewflow: ignore[security] the caller checks the path
    return len(open(path).read())
'''
LEAK = {
    "severity": "high",
    "category": "correctness",
    "file": "app/store.py",
    "existing_code": "    return open(path).read()",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use with open(path) as handle",
    "confidence": 0.9,
}
TRAVERSAL = {
    **LEAK,
    "severity": "medium",
    "category": "security",
    "existing_code": "    return len(open(path).read())",
    "title": "Path not checked",
}


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    """A repository whose files no pending change touches: a review of the workspace has
    nothing to review, an audit has every file."""
    repo.write("app/store.py", STORE)
    repo.write("app/__init__.py", "")
    repo.write("legacy/old.py", "x = 1\n")
    repo.write("tests/test_store.py", "def test_read():\n    pass\n")
    repo.write("assets/logo.png", b"\x89PNG\x00\x00")
    repo.write(".reviewflow/rules.json", json.dumps({"exclude": ["legacy/**"]}))
    repo.commit("base")
    repo.write("app/big.py", "".join(f"VALUE_{n} = {n} * {n} + {n}\n" for n in range(900)))
    repo.commit("a big module")
    return repo


def _preview(repo: GitRepo, tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "preview.json"
    code = main(["review", "--preview", "--repo", str(repo.root), "--json", str(out), *flags])
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_all_audits_every_file_the_rules_keep(
    project: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = _preview(project, tmp_path, "--all")
    assert code == 0 and doc["metadata"]["mode"] == "audit"
    assert [f["path"] for f in doc["files"]] == ["app/big.py", "app/store.py"]
    assert all(f["status"] == "added" and f["removed"] == 0 for f in doc["files"])
    excluded = {e["path"]: e["reason"] for e in doc["excluded_files"]}
    assert excluded == {
        "legacy/old.py": "user_exclude",  # the rules' exclude
        "tests/test_store.py": "default_path",
        "assets/logo.png": "binary",
        "app/__init__.py": "no_added_lines",  # empty: nothing to read
        ".reviewflow/rules.json": "unsupported_ext",
    }
    assert "Preview of audit of " in capsys.readouterr().out
    code, nothing = _preview(project, tmp_path)  # the workspace: no change at all
    assert code == 0 and nothing["files"] == []


def test_files_takes_files_and_directories_and_reads_uncommitted_edits(
    project: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.root / "app")  # paths as the shell names them
    project.write("app/store.py", STORE + "\n\ndef gone(path):\n    return None\n")
    code, doc = _preview(project, tmp_path, "--files", "store.py", "../legacy")
    assert code == 0
    assert [(f["path"], f["added"]) for f in doc["files"]] == [("app/store.py", 14)]
    assert [e["path"] for e in doc["excluded_files"]] == ["legacy/old.py"]
    code, committed = _preview(project, tmp_path, "--files", "store.py", "--commit", "HEAD")
    assert code == 0 and [(f["path"], f["added"]) for f in committed["files"]] == [
        ("app/store.py", 10)
    ]


def test_a_big_file_is_chunked_as_a_large_hunk_is(project: GitRepo, tmp_path: Path) -> None:
    code, doc = _preview(
        project, tmp_path, "--files", str(project.root / "app"), "--max-chunk-tokens", "4000"
    )
    assert code == 0
    chunks = {f["path"]: f["chunks"] for f in doc["estimate"]["files"]}
    assert chunks["app/store.py"] == 1 and chunks["app/big.py"] > 2
    code, small = _preview(project, tmp_path, "--all", "--max-file-bytes", "4096")
    too_large = [e["path"] for e in small["excluded_files"] if e["reason"] == "too_large"]
    assert code == 0 and too_large == ["app/big.py"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--files", "nope.py"], "cannot audit '{root}/nope.py': no such file or directory"),
        (["--files", "/"], "cannot audit '/': it is outside the repository {root}"),
        (["--files", "legacy", "--commit", "HEAD~1"], None),
        (["--files", "app/big.py", "--commit", "HEAD~1"], "nothing to audit at '{root}/app/big"),
        (["--files", ""], "--files needs one or more paths (files or directories)"),
        (["--all", "--files", "app"], "--files and --all cannot be combined"),
        (["--all", "--from", "HEAD~1", "--to", "HEAD"], "--all audits files as they are: it"),
        (["--files", "app", "--diff", "-"], "--files audits files as they are: it cannot be"),
        (["--all", "--commit", "nope"], "unknown revision 'nope'"),
        (["--all", "--publish", "github"], "--publish reviews the request's commits: it cannot"),
    ],
)
def test_bad_audit_input_is_one_line_and_exit_2(
    project: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    message: str | None,
) -> None:
    monkeypatch.chdir(project.root)
    code, doc = _preview(project, tmp_path, *flags)
    if message is None:  # a good one beside them
        assert code == 0 and [e["path"] for e in doc["excluded_files"]] == ["legacy/old.py"]
        return
    err = capsys.readouterr().err.strip().splitlines()
    assert (code, doc) == (2, {})
    assert len(err) == 1 and message.format(root=project.root) in err[0], err


def _review(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, *flags: str
) -> tuple[int, dict[str, Any], Path]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "gpt-4o-mini")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url("openai"))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    args = ["review", "--repo", str(repo.root), "--console", "summary", "--no-progress"]
    args += ["--report-dir", str(out), "--sarif", "report.sarif", "--markdown", "report.md"]
    code = main([*args, *flags])
    return code, json.loads((out / "review-report.json").read_text()), out


@pytest.mark.usefixtures("prefect_harness")
def test_an_audit_places_a_finding_in_a_file_no_change_touched(
    project: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The finding is on line 5 of a file committed long ago; its fingerprint is the same in
    the next run, where a dismissal drops it; in CI (`--trusted-ref HEAD`) the audited code's
    own suppression comment silences, as a comment no change added does."""
    wire.respond("openai", ScriptedReviewer({"app/store.py": [LEAK, TRAVERSAL]}))
    store = str(project.root / "app" / "store.py")
    code, report, out = _review(project, wire, monkeypatch, "--files", store)

    assert code == 1 and report["status"] == "complete"
    jsonschema.validate(report, report_schema())
    assert report["metadata"]["mode"] == "audit" and report["metadata"]["base_sha"] is None
    [finding] = [f for f in report["findings"] if f["title"] == LEAK["title"]]
    assert (finding["path"], finding["start_line"], finding["end_line"]) == ("app/store.py", 5, 5)
    [suppressed] = report["dropped"]  # locally, as in CI below: the code's own comment
    assert suppressed["reason"] == "suppressed" and suppressed["title"] == "Path not checked"
    sarif = json.loads((out / "report.sarif").read_text())
    [result, quiet] = sarif["runs"][0]["results"]  # the suppressed one, with its suppression
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert "suppressions" not in result and quiet["suppressions"][0]["kind"] == "inSource"
    assert quiet["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
    assert "audit of " in (out / "report.md").read_text()
    assert "audit of " in capsys.readouterr().out

    dismiss = ["dismiss", finding["id"], "--local", "--repo", str(project.root)]
    assert main([*dismiss, "--report", str(out / "review-report.json")]) == 0
    monkeypatch.setenv("CI", "true")
    code, again, _ = _review(
        project, wire, monkeypatch, "--files", store, "--no-cache", "--trusted-ref", "HEAD"
    )
    assert code == 0 and again["findings"] == []
    dropped = {d["title"]: d for d in again["dropped"]}
    assert dropped[LEAK["title"]]["reason"] == "dismissed"
    assert "dismissed in " in dropped[LEAK["title"]]["detail"]  # by its fingerprint:
    home = Path(os.environ["REVIEWFLOW_HOME"])
    [entry] = json.loads((home / "dismissed.json").read_text())["dismissed"]
    assert entry["fingerprint"] == finding["fingerprint"]  # the same in the second run
    assert dropped["Path not checked"]["reason"] == "suppressed"
    assert not [w for w in again["warnings"] if w["code"].startswith("suppression_")]


@pytest.mark.usefixtures("prefect_harness")
def test_max_cost_refuses_what_an_audit_cannot_pay(
    project: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wire.respond("openai", ScriptedReviewer({"app/store.py": [LEAK]}))
    code, report, _ = _review(project, wire, monkeypatch, "--all", "--max-cost", "0.0001")
    assert code == 2 and report["status"] == "incomplete"
    assert report["budget"]["reached"] and report["budget"]["max_cost"] == 0.0001
    assert wire.requests() == []  # not one request sent
    assert {f["reason"] for f in report["incomplete_files"]} == {"budget"}
    err = capsys.readouterr().err
    assert "does NOT fit the budget" in err
