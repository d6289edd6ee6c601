"""Verified findings (`--verify`) in the reports: JSON keys, SARIF properties, Markdown."""

from __future__ import annotations

import json

import jsonschema

from reviewflow.findings.models import VerificationScore
from reviewflow.models import Severity
from reviewflow.report.markdown import render_markdown
from reviewflow.report.outcome import build_report
from reviewflow.report.sarif import build_sarif
from tests.report.samples import finding, make_outcome, sarif_schema, validate_report

VERIFIED = finding(
    0,
    Severity.HIGH,
    confidence=0.8,
    model_confidence=0.95,
    verification=VerificationScore(score=8, questions=3),
)
PLAIN = finding(1, Severity.LOW)


def test_json_report_carries_score_and_question_count_of_verified_findings_only() -> None:
    report = build_report(make_outcome(findings=(VERIFIED, PLAIN)))
    validate_report(report)
    verified, plain = report["findings"]
    assert verified["confidence"] == 0.8 and verified["model_confidence"] == 0.95
    assert verified["verification"] == {"score": 8, "questions": 3}
    assert "verification" not in plain and "model_confidence" not in plain


def test_sarif_properties_carry_the_verification() -> None:
    log = json.loads(json.dumps(build_sarif(make_outcome(findings=(VERIFIED, PLAIN)))))
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    verified, plain = (result["properties"] for result in log["runs"][0]["results"])
    assert verified["verification_score"] == 8 and verified["verification_questions"] == 3
    assert verified["confidence"] == 0.8 and verified["model_confidence"] == 0.95
    assert "verification_score" not in plain


def test_markdown_says_a_finding_was_verified() -> None:
    text = render_markdown(make_outcome(findings=(VERIFIED, PLAIN)))
    assert "confidence 0.80 (verified 8/10, 3 questions; model 0.95)" in text
    assert "confidence 0.90\n" in text
