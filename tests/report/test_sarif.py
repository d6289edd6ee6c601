"""SARIF 2.1.0: valid against the official schema, levels, rules, fingerprints, locations."""

from __future__ import annotations

import json

import jsonschema

from reviewflow.models import Severity
from reviewflow.report.outcome import ReviewOutcome
from reviewflow.report.sarif import SRCROOT, artifact_uri, build_sarif, sarif_level
from tests.report.samples import HOSTILE_PATH, empty_outcome, make_outcome, sarif_schema


def test_every_outcome_is_valid_sarif(any_outcome: ReviewOutcome) -> None:
    log = json.loads(json.dumps(build_sarif(any_outcome)))
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1


def test_levels_follow_severity() -> None:
    assert [sarif_level(s) for s in Severity] == ["error", "error", "warning", "note"]
    results = build_sarif(make_outcome())["runs"][0]["results"]
    assert [(r["properties"]["severity"], r["level"]) for r in results] == [
        ("critical", "error"),
        ("critical", "error"),
        ("high", "error"),
        ("high", "error"),
        ("medium", "warning"),
        ("medium", "warning"),
        ("low", "note"),
        ("low", "note"),
    ]


def test_rules_come_from_categories_and_rule_ids() -> None:
    run = build_sarif(make_outcome())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == [
        "security/sql-injection",
        "correctness",
        "concurrency",
        "security",
        "performance",
        "compatibility",
        "tests",
    ]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_security_rules_carry_security_severity_of_their_worst_finding() -> None:
    rules = {r["id"]: r for r in build_sarif(make_outcome())["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["security/sql-injection"]["properties"]["security-severity"] == "9.5"
    assert rules["security"]["properties"]["security-severity"] == "8.0"  # high + low
    assert "security" in rules["security"]["properties"]["tags"]
    assert "security-severity" not in rules["correctness"]["properties"]


def test_results_have_regions_fingerprints_and_relative_uris() -> None:
    log = build_sarif(make_outcome())
    run = log["runs"][0]
    assert run["originalUriBaseIds"][SRCROOT]["uri"] == "file:///home/developer/projects/zadig/"
    first = run["results"][0]
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/app.py", "uriBaseId": SRCROOT}
    assert location["region"]["startLine"] == 10 and location["region"]["endLine"] == 12
    assert first["partialFingerprints"] == {"reviewflow/v1": "0000" + "ab" * 14}
    assert first["message"]["text"].startswith("critical problem number 0\n\nLine 10")


def test_odd_paths_become_uri_references() -> None:
    assert artifact_uri("dir/a b#c%.py") == "dir/a%20b%23c%25.py"
    assert artifact_uri("bad\udcff.py") == "bad%FF.py"
    assert artifact_uri(HOSTILE_PATH) == "src/we%60ird%7Cna%1B%5B31mme%0A.py"


def test_incomplete_review_is_an_unsuccessful_invocation() -> None:
    from tests.report.samples import incomplete_outcome

    invocation = build_sarif(incomplete_outcome())["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == 2
    levels = [n["level"] for n in invocation["toolExecutionNotifications"]]
    assert levels == ["warning", "warning", "error"]


def test_empty_review_has_no_results() -> None:
    run = build_sarif(empty_outcome())["runs"][0]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
