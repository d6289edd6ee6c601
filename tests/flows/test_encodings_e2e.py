"""Whole reviews of files in other encodings and of names that are not UTF-8 (issue 37 items 1
and 3), through the CLI, the official SDKs and the wire server, on real repositories."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flows.cli.main import main
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import TEST_KEY, RecordedRequest, Reply, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

LATIN1 = b'# Gr\xf6\xdfe\nname = "M\xfcller"\n'
NAME = b"caf\xe9.py".decode("utf-8", "surrogateescape")  # as Python holds the file's name
SHOWN = "caf\\xe9.py"  # as the model, the reports and the console see it
FINDING = {
    "severity": "high",
    "category": "bug",
    "existing_code": "x = undefined_name",
    "title": "Undefined name",
    "problem": "NameError at import",
    "evidence": "undefined_name is never defined",
    "suggestion": "define it",
    "confidence": 0.9,
}


class ShownNames(ScriptedReviewer):
    """The scripted reviewer, finding names in a request's text as the model reads them (a
    JSON dump doubles the backslash of `\\xNN`)."""

    def _main(self, record: RecordedRequest, text: str) -> Reply:
        return super()._main(record, text.replace("\\\\", "\\"))


def _review(
    monkeypatch: pytest.MonkeyPatch,
    wire: WireServer,
    protocol: str,
    repo: GitRepo,
    *flags: str,
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", protocol)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url(protocol))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    argv = ["review", "--repo", str(repo.root), "--console", "summary", "--report-dir", str(out)]
    reports = ["--sarif", "report.sarif", "--markdown", "report.md", "--gitlab", "cq.json"]
    code = main([*argv, *reports, *flags])
    report = json.loads((out / "review-report.json").read_text(encoding="utf-8"))
    return code, report


def _sent_text(wire: WireServer) -> str:
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in wire.requests())


def _base(repo: GitRepo) -> str:
    repo.write("base.py", "x = 1\n")
    return repo.commit("base")


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_an_undeclared_latin1_file_is_reviewed_with_a_note(
    protocol: str, repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.respond(protocol, ScriptedReviewer({"latin1.py": []}))
    _base(repo)
    repo.write("latin1.py", LATIN1)
    repo.commit("latin1")
    code, report = _review(monkeypatch, wire, protocol, repo, "--commit", "HEAD")

    assert (code, report["status"], report["errors"]) == (0, "complete", [])
    [note] = [w for w in report["warnings"] if w["code"] == "encoding"]
    assert note["path"] == "latin1.py" and "U+FFFD" in note["message"]
    assert 'name = \\"M\ufffdller\\"' in _sent_text(wire)  # the request reached the server
    assert report["usage"]["requests"] == len(wire.requests()) > 0


def test_a_declared_latin1_file_is_read_as_latin1_and_its_finding_placed(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    finding = {**FINDING, "existing_code": 'name = "Müller"', "title": "Hard-coded name"}
    wire.respond("openai", ScriptedReviewer({"latin1.py": [finding]}))
    _base(repo)
    repo.write("latin1.py", b"# -*- coding: latin-1 -*-\n" + LATIN1)
    repo.commit("latin1")
    code, report = _review(monkeypatch, wire, "openai", repo, "--commit", "HEAD")

    assert code == 1 and report["status"] == "complete"
    assert "# Größe" in _sent_text(wire)
    assert not [w for w in report["warnings"] if w["code"] == "encoding"]
    [placed] = report["findings"]
    assert (placed["path"], placed["start_line"]) == ("latin1.py", 3)


def _name_repo(repo: GitRepo, how: str) -> list[str]:
    """A change adding a file named `caf\\xe9.py` (untracked, or committed); the CLI flags."""
    base = _base(repo)
    (repo.root / NAME).write_bytes(b"x = undefined_name\n")
    if how == "untracked":
        return []
    head = repo.commit("name")
    return ["--commit", "HEAD"] if how == "commit" else ["--from", base, "--to", head]


@pytest.mark.parametrize("how", ["untracked", "commit", "range"])
def test_a_name_that_is_not_utf8_is_reviewed_and_reported(
    how: str,
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reviewer = ShownNames({SHOWN: [{**FINDING, "file": SHOWN}]})
    wire.respond("openai", reviewer)
    flags = _name_repo(repo, how)
    code, report = _review(monkeypatch, wire, "openai", repo, *flags)

    assert (code, report["status"], report["errors"]) == (1, "complete", [])
    [finding] = report["findings"]
    assert (finding["path"], finding["start_line"]) == (SHOWN, 1)
    reads = [t for p in report["process"] for t in p["tool_calls"] if t["name"] == "file_read"]
    assert reads and all(t["status"] == "ok" for t in reads)  # the model read it by that name
    out = repo.root.parent / "out"
    sarif = json.loads((out / "report.sarif").read_text(encoding="utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "caf%5Cxe9.py"
    assert SHOWN.replace("\\", "\\\\") in (out / "report.md").read_text(encoding="utf-8")
    assert json.loads((out / "cq.json").read_text(encoding="utf-8"))[0]["location"]["path"] == SHOWN
    assert SHOWN in capsys.readouterr().out
