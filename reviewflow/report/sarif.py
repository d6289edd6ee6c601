"""SARIF 2.1.0 for GitHub code scanning: one run, one rule per category and rule ID."""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

from reviewflow.findings.models import DropReason, Finding
from reviewflow.models import Category, Severity
from reviewflow.report.outcome import SEVERITY_ORDER, ReviewOutcome
from reviewflow.report.textsafe import json_safe

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "reviewflow/v1"
LEVELS = {Severity.CRITICAL: "error", Severity.HIGH: "error", Severity.MEDIUM: "warning"}
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
}


def sarif_level(severity: Severity) -> str:
    """critical/high -> error, medium -> warning, low -> note."""
    return LEVELS.get(severity, "note")


def rule_key(finding: Finding) -> str:
    """The SARIF rule ID of a finding: its category, plus its rule ID when it has one."""
    return (
        f"{finding.category.value}/{finding.rule_id}" if finding.rule_id else finding.category.value
    )


def artifact_uri(path: str) -> str:
    """A repository-relative path as a URI reference (percent-encoded, bytes kept)."""
    return quote(os.fsencode(str(PurePosixPath(path))), safe="/")


def _rule(key: str, findings: list[Finding]) -> dict[str, Any]:
    category = findings[0].category
    worst = min(findings, key=lambda f: SEVERITY_ORDER.index(f.severity)).severity
    properties: dict[str, Any] = {"tags": [category.value]}
    if category == Category.SECURITY:
        properties["security-severity"] = SECURITY_SEVERITY[worst]
    return {
        "id": key,
        "name": key,
        "shortDescription": {"text": f"reviewflow {category.value} finding ({key})"},
        "defaultConfiguration": {"level": sarif_level(worst)},
        "properties": properties,
    }


def _message(finding: Finding) -> str:
    parts = [finding.title or finding.problem, finding.problem]
    if finding.suggestion:
        parts.append(f"Suggestion: {finding.suggestion}")
    return "\n\n".join(part for part in dict.fromkeys(parts) if part) or finding.id


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": finding.start_line, "endLine": finding.end_line}
    if finding.existing_code:
        region["snippet"] = {"text": finding.existing_code}
    return {
        "ruleId": rule_key(finding),
        "ruleIndex": rule_index,
        "level": sarif_level(finding.severity),
        "message": {"text": _message(finding)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": artifact_uri(finding.path), "uriBaseId": SRCROOT},
                    "region": region,
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: finding.fingerprint},
        "properties": {
            "id": finding.id,
            "severity": finding.severity.value,
            "category": finding.category.value,
            "confidence": finding.confidence,
            "placed_by": finding.placed_by.value,
            **({"agreement": finding.agreement} if finding.agreement else {}),
            **_verification(finding),
        },
    }


def _verification(finding: Finding) -> dict[str, Any]:
    """A verified finding's score, question count and the model's own confidence."""
    if finding.verification is None:
        return {}
    return {
        "verification_score": finding.verification.score,
        "verification_questions": finding.verification.questions,
        "model_confidence": finding.model_confidence,
    }


def _invocation(outcome: ReviewOutcome) -> dict[str, Any]:
    notes = [("warning", w) for w in outcome.warnings] + [("error", e) for e in outcome.errors]
    return {
        "executionSuccessful": outcome.status == "complete",
        "exitCode": outcome.exit_code,
        "toolExecutionNotifications": [
            {"level": level, "message": {"text": item.message}, "descriptor": {"id": item.code}}
            for level, item in notes
        ],
    }


def silenced(outcome: ReviewOutcome) -> list[tuple[Finding, dict[str, Any]]]:
    """The suppressed and dismissed findings, each with its SARIF suppression: `inSource`
    for a `reviewflow: ignore` comment, `external` for a dismissal; accepted, justified by
    the drop's detail (where and why)."""
    kinds = {
        DropReason.SUPPRESSED: "inSource",
        DropReason.DISMISSED: "external",
        DropReason.SILENCE_RULE: "external",
    }
    return [
        (
            drop.finding,
            {"kind": kinds[drop.reason], "status": "accepted", "justification": drop.detail or ""},
        )
        for drop in outcome.dropped
        if drop.reason in kinds and drop.finding is not None
    ]


def build_sarif(outcome: ReviewOutcome) -> dict[str, Any]:
    """The SARIF 2.1.0 log of a review (valid against the official schema): its findings,
    then the suppressed and dismissed ones with their `suppressions`."""
    findings = outcome.sorted_findings()
    quiet = silenced(outcome)
    grouped: dict[str, list[Finding]] = {}
    for finding in [*findings, *(item for item, _ in quiet)]:
        grouped.setdefault(rule_key(finding), []).append(finding)
    index = {key: i for i, key in enumerate(grouped)}
    run = {
        "tool": {
            "driver": {
                "name": "reviewflow",
                "version": outcome.metadata.tool_version,
                "rules": [_rule(key, members) for key, members in grouped.items()],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": _root_uri(outcome.metadata.repository)}},
        "invocations": [_invocation(outcome)],
        "results": [_result(f, index[rule_key(f)]) for f in findings]
        + [{**_result(f, index[rule_key(f)]), "suppressions": [why]} for f, why in quiet],
        "properties": {"review_id": outcome.review_id, "status": outcome.status},
    }
    log = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    safe: dict[str, Any] = json_safe(log)
    return safe


def _root_uri(repository: str) -> str:
    encoded = quote(os.fsencode(repository.rstrip("/")), safe="/")
    return f"file://{encoded if encoded.startswith('/') else '/' + encoded}/"
