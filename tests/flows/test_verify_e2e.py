"""`--verify` through the CLI, each official SDK and the wire server, on a real repository:
scores replace confidence, low ones are dropped as not_verified, a verify model of its own,
usage, a failed verification (incomplete, exit 2) and the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer, stage_of
from tests.flows.test_review_e2e import SPLIT, _repo
from tests.gitutil import GitRepo
from tests.wire_server import (
    PROTOCOLS,
    TEST_KEY,
    HttpError,
    RecordedRequest,
    Reply,
    Text,
    WireServer,
)

pytestmark = pytest.mark.usefixtures("prefect_harness")

LEAK = {
    "severity": "medium",
    "category": "correctness",
    "file": "app/settings.py",
    "existing_code": "handle = open(path)",
    "title": "File handle never closed",
    "problem": "PROBLEM-open() without close",
    "evidence": "EVIDENCE-no with-block",
    "suggestion": "SUGGESTION-use with open(path)",
    "confidence": 0.95,
}
VERIFY = ("verify_questions", "verify_answer", "verify_score")


def _review(
    monkeypatch: pytest.MonkeyPatch, wire: WireServer, protocol: str, repo: GitRepo, *flags: str
) -> tuple[int, dict[str, Any]]:
    monkeypatch.setenv("REVIEWFLOW_MODEL_PROTOCOL", protocol)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "test-model")
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.base_url(protocol))
    monkeypatch.setenv("REVIEWFLOW_MODEL_API_KEY", TEST_KEY)
    out = repo.root.parent / "out"
    args = ["--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    code = main(["review", *args, "--report-dir", str(out), "--sarif", "report.sarif", *flags])
    report = json.loads((out / "review-report.json").read_text())
    return code, report


def _stage(request: RecordedRequest) -> str:
    return stage_of(json.dumps(request.body, ensure_ascii=False))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_verify_scores_findings_with_a_model_of_its_own(
    protocol: str, repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = ScriptedReviewer(
        {"app/settings.py": [SPLIT, LEAK]}, verify_scores={LEAK["title"]: 3}
    )
    wire.respond(protocol, reviewer)
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, protocol, repo, "--verify-model", "verifier-model")

    assert code == 1 and report["status"] == "complete"
    jsonschema.validate(report, report_schema())
    verification = {"model": "verifier-model", "budget": 4, "threshold": 0.75}
    assert report["metadata"]["verification"] == verification
    [finding] = report["findings"]
    assert finding["title"] == SPLIT["title"]
    assert (finding["confidence"], finding["model_confidence"]) == (0.9, 0.85)
    assert finding["verification"] == {"score": 9, "questions": 2}
    [drop] = [d for d in report["dropped"] if d["reason"] == "not_verified"]
    assert drop["title"] == LEAK["title"] and drop["path"] == "app/settings.py"
    assert drop["detail"].startswith("verification score 3/10 = 0.3 < review.confidence_threshold")
    assert "Q1: [q0] Is it guarded? A1: No: nothing in the file guards it." in drop["detail"]
    # two findings: questions, two questions answered after one read each, a score
    assert reviewer.stages == {
        "main": 3,
        "filter": 1,
        "verify_questions": 2,
        "verify_answer": 8,
        "verify_score": 2,
    }
    for request in wire.requests():
        verifying = _stage(request) in VERIFY
        assert request.model == ("verifier-model" if verifying else "test-model")
        if _stage(request) in ("verify_answer", "verify_score"):
            assert not any(word in json.dumps(request.body) for word in ("PROBLEM-", "EVIDENCE-"))
    assert report["usage"]["requests"] == report["stats"]["llm_requests"] == len(wire.requests())
    # the estimate expects little of a small change, but its range holds the two findings
    estimate = report["estimate"]
    assert estimate["requests"] < report["usage"]["requests"]
    span = estimate["range"]
    assert span["low"]["requests"] <= report["usage"]["requests"] <= span["high"]["requests"]
    process = [record["stage"] for record in report["process"]]
    assert process.count("verify_answer") == 8 and process.count("verify_score") == 2
    sarif = json.loads((repo.root.parent / "out" / "report.sarif").read_text())
    [result] = sarif["runs"][0]["results"]
    assert result["properties"]["verification_score"] == 9
    assert result["properties"]["verification_questions"] == 2


class _FailingScores(ScriptedReviewer):
    """Every score request fails with HTTP 400 while `failing` is set."""

    failing = True

    def __call__(self, record: RecordedRequest) -> Reply:
        if self.failing and _stage(record) == "verify_score":
            return HttpError(400)
        return super().__call__(record)


def test_a_failed_verification_keeps_the_finding_and_exits_2_then_is_asked_again(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch, rf_home: Path
) -> None:
    reviewer = _FailingScores({"app/settings.py": [SPLIT]})
    wire.respond("openai", reviewer)
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, "openai", repo, "--verify")

    assert (code, report["status"]) == (2, "incomplete")
    [finding] = report["findings"]  # kept unverified: its own confidence, no score
    assert finding["confidence"] == 0.85 and "verification" not in finding
    assert "verification_failed" in [w["code"] for w in report["warnings"]]
    assert "verify_score_request_failed" in [e["code"] for e in report["errors"]]
    assert report["usage"]["requests"] == len(wire.requests())
    first = len(wire.requests())

    reviewer.failing = False  # the next run asks only the verification again
    code, report = _review(monkeypatch, wire, "openai", repo, "--verify")
    again = [_stage(r) for r in wire.requests()[first:]]
    assert code == 1 and report["findings"][0]["verification"]["score"] == 9
    assert set(again) == set(VERIFY) and len(again) == 6
    assert report["usage"]["requests"] == 6  # the reused answers cost nothing

    seen = len(wire.requests())
    code, report = _review(monkeypatch, wire, "openai", repo, "--verify")
    assert code == 1 and len(wire.requests()) == seen  # everything from the cache
    assert report["findings"][0]["verification"] == {"score": 9, "questions": 2}


class _NoQuestions(ScriptedReviewer):
    """The verifier answers the questions request with an empty array."""

    def __call__(self, record: RecordedRequest) -> Reply:
        if _stage(record) == "verify_questions":
            with self._lock:
                self.stages["verify_questions"] += 1
            return Text("[]")
        return super().__call__(record)


def test_a_verifier_that_asks_nothing_keeps_the_finding_and_the_review_complete(
    repo: GitRepo, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    reviewer = _NoQuestions({"app/settings.py": [SPLIT]})
    wire.respond("openai", reviewer)
    _repo(repo.root)
    code, report = _review(monkeypatch, wire, "openai", repo, "--verify")

    assert (code, report["status"]) == (1, "complete")  # the kept finding fails the gate
    jsonschema.validate(report, report_schema())
    [finding] = report["findings"]  # kept unverified: its own confidence, no score
    assert finding["confidence"] == 0.85 and "verification" not in finding
    assert report["errors"] == []
    [warning] = [w for w in report["warnings"] if w["code"].startswith("verification")]
    assert warning["code"] == "verification_no_questions"
    assert warning["message"].startswith("the verifier asked no question about F")
    assert reviewer.stages["verify_questions"] == 1
    assert not any(_stage(r) in ("verify_answer", "verify_score") for r in wire.requests())
