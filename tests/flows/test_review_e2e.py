"""Whole reviews through the CLI, each official SDK and the wire server, on a real repository.

One Prefect test API serves them all (`prefect_harness`); the model is `ScriptedReviewer`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.wire_server import PROTOCOLS, TEST_KEY, HttpError, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

BASE = '''"""Settings."""


def load(path):
    return {}
'''
HEAD = '''"""Settings."""


def load(path):
    handle = open(path)
    data = handle.read()
    return parse(data)


def parse(text):
    return dict(line.split("=", 1) for line in text.splitlines())
'''
LEAK = {
    "severity": "High",
    "category": "resource",  # not one of the six: dropped as an unknown category
    "file": "app/settings.py",
    "existing_code": "handle = open(path)",
    "title": "File handle never closed",
    "problem": "open() without close",
    "evidence": "no with-block",
    "suggestion": "use with open(path) as handle",
    "confidence": 0.9,
}
SPLIT = {
    "severity": "high",
    "category": "bug",  # alias of correctness
    "file": "app/settings.py",
    "start_line": 40,  # wrong: the code says where it is
    "existing_code": '        return dict(line.split("=", 1) for line in text.splitlines())',
    "title": "Lines without '=' crash parse",
    "problem": "ValueError on a line without '='",
    "evidence": "split result unpacked into pairs",
    "suggestion": "skip or report malformed lines",
    "confidence": 0.85,
}
HUNCH = {**SPLIT, "severity": "low", "title": "Maybe slow", "confidence": 0.3}
GHOST = {**SPLIT, "file": "app/ghost.py", "title": "Not in the change"}


def _repo(root: Path) -> GitRepo:
    repo = GitRepo.init(root)
    repo.write("app/settings.py", BASE)
    repo.commit("base")
    repo.write("app/settings.py", HEAD)
    repo.commit("read settings")
    return repo


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, protocol: str, repo: GitRepo, *flags: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", protocol)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url(protocol))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    code = main(
        [
            "review",
            "--repo",
            str(repo.root),
            "--commit",
            "HEAD",
            "--console",
            "summary",
            "--report-dir",
            str(out),
            "--sarif",
            "report.sarif",
            "--gitlab",
            "code-quality.json",
            *flags,
        ]
    )
    report = json.loads((out / "review-report.json").read_text())
    return code, report


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_review_places_filters_and_gates(
    protocol: str,
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
) -> None:
    reviewer = ScriptedReviewer({"app/settings.py": [LEAK, SPLIT, HUNCH, GHOST, SPLIT]})
    wire.respond(protocol, reviewer)
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, protocol, repo)

    assert code == 1  # a high finding and the default fail_on
    jsonschema.validate(report, report_schema())
    assert report["status"] == "complete"
    [finding] = report["findings"]
    assert finding["path"] == "app/settings.py"
    assert (finding["start_line"], finding["end_line"]) == (11, 11)
    assert (finding["severity"], finding["category"]) == ("high", "correctness")
    reasons = sorted(d["reason"] for d in report["dropped"])
    assert reasons == ["below_threshold", "duplicate", "outside_change", "unknown_category"]
    # read, comment, done; every candidate placed by its code (no relocation); the filter
    assert reviewer.stages == {"main": 3, "filter": 1}
    assert report["usage"]["requests"] == report["stats"]["llm_requests"] == len(wire.requests())
    assert wire.unexpected == 0
    out = repo.root.parent / "out"
    quality = json.loads((out / "code-quality.json").read_text())
    assert [(q["location"]["path"], q["severity"]) for q in quality] == [
        ("app/settings.py", "critical")
    ]
    for path in [*out.iterdir(), *rf_home.rglob("*")]:  # reports, logs, cached results
        assert not path.is_file() or TEST_KEY.encode() not in path.read_bytes(), path


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """A usual umask (022): what a review writes under its home is private all the same."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_second_identical_review_makes_no_request(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    rf_home: Path,
    usual_umask: None,
) -> None:
    rf_home.chmod(0o755)  # a home left readable by others, from before
    reviewer = ScriptedReviewer({"app/settings.py": [SPLIT], "app/big.py": []})
    wire.respond("openai", reviewer)
    _repo(repo.root)
    repo.write("app/big.py", "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(30)))
    repo.git("add", "-A")
    repo.git("commit", "-q", "--amend", "--no-edit")  # 60 changed lines: planned too
    first_code, first = _review(monkeypatch, wire, "openai", repo)
    assert reviewer.stages["plan"] == 1 and reviewer.stages["filter"] == 1
    sent = len(wire.requests())
    second_code, second = _review(monkeypatch, wire, "openai", repo)

    assert len(wire.requests()) == sent  # every stage came from the cache
    assert (first_code, second_code) == (1, 1)
    assert [f["fingerprint"] for f in second["findings"]] == [
        f["fingerprint"] for f in first["findings"]
    ]
    assert first["usage"]["requests"] == sent
    assert second["usage"]["requests"] == second["usage"]["total_tokens"] == 0  # nothing paid
    assert all(record["reused"] for record in second["process"])
    assert len(second["process"]) == len(first["process"])

    third_code, _ = _review(monkeypatch, wire, "openai", repo, "--no-cache")
    assert third_code == 1 and len(wire.requests()) == 2 * sent
    # Cached answers hold repository source, logs may hold it too: nobody else reads them.
    assert list((rf_home / "cache" / "results").iterdir())
    readable = [p for p in [rf_home, *rf_home.rglob("*")] if p.stat().st_mode & 0o077]
    assert readable == [rf_home / ".gitconfig"]  # the test's own file, not reviewflow's


def test_failing_provider_is_incomplete_and_retried_next_time(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reviewer = ScriptedReviewer({"app/settings.py": [SPLIT]}, fail_paths={"app/settings.py": 401})
    wire.respond("anthropic", reviewer)
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, "anthropic", repo)

    assert code == 2
    assert report["status"] == "incomplete" and report["exit_code"] == 2
    assert [e["code"] for e in report["errors"]] == ["main_request_failed"]
    assert report["usage"]["requests"] == 1  # a 401 is not retried
    assert TEST_KEY not in json.dumps(report)
    assert "  0 of 1 file reviewed (1 incomplete: error), 0 findings" in capsys.readouterr().out
    # With the console off, exit 2 is still one line on stderr, naming the cause.
    code, _ = _review(monkeypatch, wire, "anthropic", repo, "--console", "off")
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    (line,) = captured.err.splitlines()
    assert line.startswith("reviewflow: review incomplete: ") and "401" in line
    assert line.endswith(
        "(1 file incomplete) (report: " + str(repo.root.parent / "out" / "review-report.json") + ")"
    )

    reviewer.fail_paths.clear()
    code, report = _review(monkeypatch, wire, "anthropic", repo)
    assert code == 1 and report["status"] == "complete"  # the failed chunk was not reused
    assert "  1 of 1 file reviewed, 1 finding" in capsys.readouterr().out


def test_a_report_that_fails_at_the_end_still_prints_the_console_report(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    _repo(repo.root)
    # The JSON report is written first; the Markdown one then finds a file where its directory
    # should be: a failure the early check of the paths cannot see.
    flags = ("--markdown", "review-report.json/x.md")
    code, report = _review(monkeypatch, wire, "openai", repo, *flags)

    assert code == 2 and report["exit_code"] == 1  # the review itself passed its stages
    out, err = capsys.readouterr()
    assert "  1 of 1 file reviewed, 1 finding" in out  # the paid review is shown
    [line] = [ln for ln in err.strip().splitlines() if not ln.startswith("reviewflow: estimate:")]
    assert "cannot write" in line and "review-report.json/x.md" in line
    reports = repo.root.parent / "out"
    kept = ("review-report.json", "report.sarif", "code-quality.json")
    assert line.endswith("; written: " + ", ".join(str(reports / name) for name in kept))


def test_a_report_on_stdout_is_alone_there(
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--json - | jq`: the console report goes to stderr."""
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    _repo(repo.root)
    code, _ = _review(monkeypatch, wire, "openai", repo, "--markdown", "-")

    assert code == 1
    out, err = capsys.readouterr()
    assert out.startswith("# Code review report\n") and "Review " not in out.splitlines()[0]
    assert "  1 of 1 file reviewed, 1 finding" in err and "markdown report: -" in err


def test_transient_error_is_retried_and_both_attempts_counted(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire.script("gemini", [HttpError(429)])
    wire.respond("gemini", ScriptedReviewer({"app/settings.py": []}))
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, "gemini", repo)

    assert code == 0 and report["status"] == "complete"
    assert report["findings"] == []
    assert report["usage"]["requests"] == len(wire.requests()) == 3  # 429, then read, done
