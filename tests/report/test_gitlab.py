"""GitLab Code Quality: the array of issues GitLab reads, one per finding."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from reviewflow.report.gitlab import build_code_quality
from reviewflow.report.outcome import ReviewOutcome
from tests.report.samples import empty_outcome, make_outcome

# DESIGN.md: a JSON array of {description, check_name, fingerprint, severity, location}.
CODE_QUALITY_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "additionalProperties": False,
                        "properties": {
                            "begin": {"type": "integer", "minimum": 1},
                            "end": {"type": "integer", "minimum": 1},
                        },
                    },
                },
            },
        },
    },
}


def test_every_outcome_has_the_code_quality_shape(any_outcome: ReviewOutcome) -> None:
    issues = json.loads(json.dumps(build_code_quality(any_outcome)))
    jsonschema.Draft202012Validator(CODE_QUALITY_SCHEMA).validate(issues)
    fingerprints = [issue["fingerprint"] for issue in issues]
    assert len(set(fingerprints)) == len(fingerprints)


def test_severities_and_locations() -> None:
    issues = build_code_quality(make_outcome())
    assert [i["severity"] for i in issues] == [
        "blocker",
        "blocker",
        "critical",
        "critical",
        "major",
        "major",
        "minor",
        "minor",
    ]
    assert issues[0] == {
        "description": "critical problem number 0",
        "check_name": "security/sql-injection",
        "fingerprint": "0000" + "ab" * 14,
        "severity": "blocker",
        "location": {"path": "src/app.py", "lines": {"begin": 10, "end": 12}},
    }
    single = next(i for i in issues if i["location"]["lines"]["begin"] == 40)
    assert single["location"]["lines"] == {"begin": 40}


def test_empty_review_is_an_empty_array() -> None:
    assert build_code_quality(empty_outcome()) == []
