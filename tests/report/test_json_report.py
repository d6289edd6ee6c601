"""The JSON report: DESIGN.md's keys, valid against the published schema, nothing dropped
silently, never the API key."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import jsonschema
import pytest
from pydantic import SecretStr

from reviewflow.config import Config, ConsoleMode, ModelSettings, ReviewSettings
from reviewflow.findings.models import DropReason
from reviewflow.report.artifacts import findings_table, summary_markdown
from reviewflow.report.assemble import excluded_files, review_metadata, reviewed_files
from reviewflow.report.console import make_console, print_console
from reviewflow.report.outcome import ReviewOutcome, build_report, report_json, report_schema
from reviewflow.report.writers import RENDERERS
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import collect, select
from tests.gitutil import GitRepo
from tests.report.samples import empty_outcome, make_outcome, validate_report

DESIGN_KEYS = [
    "schema_version",
    "review_id",
    "status",
    "exit_code",
    "metadata",
    "stats",
    "findings",
    "dropped",
    "excluded_files",
    "rules",
    "warnings",
    "errors",
    "usage",
    "duration_ms",
    "process",
]
METADATA_KEYS = {
    "repository",
    "mode",
    "from",
    "to",
    "commit",
    "base_sha",
    "head_sha",
    "model",
    "language",
    "tool_version",
    "started_at",
    "finished_at",
}


def test_every_outcome_validates_against_the_published_schema(any_outcome: ReviewOutcome) -> None:
    report = json.loads(report_json(any_outcome))
    validate_report(report)
    assert list(report) == DESIGN_KEYS


def test_keys_and_stats_of_a_realistic_review() -> None:
    report = build_report(make_outcome())
    assert set(report["metadata"]) >= METADATA_KEYS
    assert report["metadata"]["from"] == "origin/main"
    assert report["metadata"]["model"] == {
        "protocol": "openai",
        "name": "gpt-test",
        "endpoint": "http://127.0.0.1:9/v1",
        "platform": "direct",
    }
    assert report["stats"] == {
        "files_changed": 5,
        "files_reviewed": 3,
        "files_excluded": 2,
        "chunks": 4,
        "llm_requests": 3,
        "tool_calls": 3,
        "findings": 8,
        "findings_by_severity": {"critical": 2, "high": 2, "medium": 2, "low": 2},
    }
    assert set(report["usage"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "requests",
        "by_model",  # each model's share, at its price (tests/cost/test_pass_prices.py)
    }
    severities = [f["severity"] for f in report["findings"]]
    assert severities == ["critical"] * 2 + ["high"] * 2 + ["medium"] * 2 + ["low"] * 2
    assert report["process"][0]["tool_calls"][0]["arguments"] == {"file_path": "src/app.py"}


def test_every_dropped_candidate_is_listed_with_its_reason() -> None:
    report = build_report(make_outcome())
    reasons = {d["reason"] for d in report["dropped"]}
    assert reasons == {reason.value for reason in DropReason}
    duplicate = next(d for d in report["dropped"] if d["reason"] == "duplicate")
    assert duplicate["duplicate_of"] == "F0000abab"
    below = next(d for d in report["dropped"] if d["reason"] == "below_threshold")
    assert below["detail"] == "confidence 0.4 < 0.75"
    assert "duplicate_of" not in below


def test_rules_group_the_files_they_covered() -> None:
    rules = build_report(make_outcome())["rules"]
    assert [(r["source"], r["files"]) for r in rules] == [
        ("system:python", ["src/app.py", "src/util.py"]),
        ("rules.json", ["api/handlers.py"]),
    ]


def test_empty_review() -> None:
    report = build_report(empty_outcome())
    assert report["findings"] == [] and report["rules"] == [] and report["process"] == []
    assert report["stats"]["findings_by_severity"] == {
        "critical": 0,
        "high": 0,
        "medium": 0,
        "low": 0,
    }


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("status",), "partial"),
        (("exit_code",), 3),
        (("findings", 0, "severity"), "info"),
        (("findings", 0, "start_line"), 0),
        (("dropped", 0, "reason"), "vanished"),
        (("metadata", "model", "api_key"), "sk-x"),
    ],
)
def test_schema_rejects_bad_reports(path: tuple[str | int, ...], value: object) -> None:
    report = build_report(make_outcome())
    target = report
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)


def test_schema_is_itself_valid_and_requires_the_design_keys() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == DESIGN_KEYS


def test_non_utf8_names_stay_valid_json() -> None:
    outcome = make_outcome(excluded=[{"path": "bad\udcffname.py", "reason": "binary"}])
    text = report_json(outcome)
    text.encode("utf-8")
    assert json.loads(text)["excluded_files"][0]["path"] == "bad\\xffname.py"


def test_no_report_of_a_keyed_config_holds_the_key(repo: GitRepo) -> None:
    key = "sk-test-SECRET-0123456789"
    repo.write("app.py", "print(1)\n")
    repo.git("add", ".")
    repo.git("commit", "-qm", "one")
    repo.write("app.py", "print(2)\n")
    request = ReviewRequest.from_flags(str(repo.root), home=str(repo.root / ".home"))
    scope = select(collect(request, 3), request, ReviewSettings().max_file_bytes)
    model = ModelSettings(protocol="anthropic", name="claude-x", api_key=SecretStr(key))
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    outcome = make_outcome(
        metadata=review_metadata(scope, request, Config(model=model), (now, now)),
        files=reviewed_files(scope.selection),
        excluded=excluded_files(scope.selection),
    )
    console = io.StringIO()
    print_console(outcome, ConsoleMode.DETAILED, make_console(console, {}))
    texts = [render(outcome) for render in RENDERERS.values()]
    texts += [outcome.model_dump_json(), console.getvalue(), str(findings_table(outcome))]
    texts.append(summary_markdown(outcome))
    assert not [text for text in texts if key in text or "SECRET" in text]
    report = json.loads(report_json(outcome))
    validate_report(report)
    assert report["metadata"]["model"] == {
        "protocol": "anthropic",
        "name": "claude-x",
        "endpoint": "https://api.anthropic.com",
        "platform": "direct",
    }
    assert report["metadata"]["mode"] == "workspace"
    assert report["metadata"]["started_at"] == "2026-11-30T12:00:00Z"
    assert [f["files"] for f in report["rules"]] == [["app.py"]]
