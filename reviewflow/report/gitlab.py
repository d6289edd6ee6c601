"""GitLab Code Quality: a JSON array of Code Climate issues (the subset GitLab reads)."""

from __future__ import annotations

from typing import Any

from reviewflow.findings.models import Finding
from reviewflow.models import Severity
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.sarif import rule_key
from reviewflow.report.textsafe import json_safe

GITLAB_SEVERITY = {
    Severity.CRITICAL: "blocker",
    Severity.HIGH: "critical",
    Severity.MEDIUM: "major",
    Severity.LOW: "minor",
}


def _issue(finding: Finding) -> dict[str, Any]:
    lines: dict[str, int] = {"begin": finding.start_line}
    if finding.end_line != finding.start_line:
        lines["end"] = finding.end_line
    return {
        "description": finding.title or finding.problem or finding.id,
        "check_name": rule_key(finding),
        "fingerprint": finding.fingerprint,
        "severity": GITLAB_SEVERITY[finding.severity],
        "location": {"path": finding.path, "lines": lines},
    }


def build_code_quality(outcome: ReviewOutcome) -> list[dict[str, Any]]:
    """The GitLab Code Quality report: one issue per finding, most severe first."""
    issues: list[dict[str, Any]] = json_safe([_issue(f) for f in outcome.sorted_findings()])
    return issues
