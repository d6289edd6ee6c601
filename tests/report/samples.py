"""Realistic review outcomes for the report writers: every severity, every drop reason,
warnings, an incomplete review, an empty one, hostile text."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
from markdown_it import MarkdownIt
from markdown_it.token import Token

from reviewflow.findings.models import Dropped, DropReason, Finding, PlacedBy
from reviewflow.models import Category, ReviewWarning, Severity
from reviewflow.providers.messages import Usage
from reviewflow.providers.pool import UsageTotals
from reviewflow.report.outcome import (
    ExcludedFile,
    ModelInfo,
    ReviewedFile,
    ReviewMetadata,
    ReviewOutcome,
    report_schema,
)
from reviewflow.review.records import RequestRecord, ToolRecord

DATA = Path(__file__).parent.parent / "data"
HOSTILE_TITLE = (
    "Use `eval` | <script>alert(1)</script>\n# Fake heading\x1b[2J\r\n- [x](javascript:x)"
)
HOSTILE_PATH = "src/we`ird|na\x1b[31mme\n.py"

PY_RULE = {
    "layer": "system",
    "source": "system:python",
    "pattern": "**/*.py",
    "name": "python",
    "reference": None,
    "merged_with": None,
}
USER_RULE = {
    "layer": "user",
    "source": "rules.json",
    "pattern": "api/**",
    "name": None,
    "reference": "docs/api-review.md",
    "merged_with": "python",
}


def finding(
    n: int,
    severity: Severity,
    category: Category = Category.CORRECTNESS,
    path: str = "src/app.py",
    **extra: Any,
) -> Finding:
    fingerprint = f"{n:04d}" + "ab" * 14
    fields: dict[str, Any] = {
        "id": f"F{fingerprint[:8]}",
        "fingerprint": fingerprint,
        "severity": severity,
        "category": category,
        "rule_id": None,
        "path": path,
        "start_line": 10 + n,
        "end_line": 12 + n,
        "title": f"{severity.value} problem number {n}",
        "problem": f"Line {10 + n} dereferences a value that can be None.",
        "evidence": "The caller passes `None` when the cache misses.",
        "suggestion": "Check for None before use.",
        "confidence": 0.9,
        "existing_code": "value = cache.get(key)\nreturn value.name",
        "placed_by": PlacedBy.EXACT,
    }
    fields.update(extra)
    return Finding(**fields)


def all_findings() -> tuple[Finding, ...]:
    return (
        finding(0, Severity.CRITICAL, Category.SECURITY, rule_id="sql-injection"),
        finding(1, Severity.CRITICAL),
        finding(2, Severity.HIGH, Category.CONCURRENCY, path="api/handlers.py"),
        finding(3, Severity.HIGH, Category.SECURITY, path="api/handlers.py"),
        finding(4, Severity.MEDIUM, Category.PERFORMANCE),
        finding(5, Severity.MEDIUM, Category.COMPATIBILITY, start_line=40, end_line=40),
        finding(6, Severity.LOW, Category.TESTS, evidence="", suggestion=""),
        finding(7, Severity.LOW, Category.SECURITY, path="api/handlers.py"),
    )


def all_dropped() -> tuple[Dropped, ...]:
    out = []
    for reason in DropReason:
        duplicate_of = "F0000abab" if reason == DropReason.DUPLICATE else None
        out.append(
            Dropped(
                path="src/app.py",
                title=f"candidate dropped as {reason.value}",
                reason=reason,
                duplicate_of=duplicate_of,
                detail="confidence 0.4 < 0.75" if reason == DropReason.BELOW_THRESHOLD else None,
            )
        )
    return tuple(out)


def process_records() -> tuple[RequestRecord, ...]:
    calls = (
        ToolRecord(id="t1", name="file_read", arguments={"file_path": "src/app.py"}, output="..."),
        ToolRecord(id="t2", name="code_search", arguments={"search_text": "cache"}),
        ToolRecord(id="t3", name="file_read", arguments={"file_path": "../x"}, status="error"),
    )
    return (
        RequestRecord(
            stage="main",
            path="src/app.py",
            chunk=0,
            round=1,
            started_at="2026-11-30T12:00:01Z",
            duration_ms=900,
            finish_reason="tool_calls",
            usage=Usage(prompt_tokens=1000, completion_tokens=50, total_tokens=1050),
            tool_calls=calls,
        ),
        RequestRecord(
            stage="filter",
            attempts=2,
            status="error",
            error="timeout after 120s",
            usage=Usage(prompt_tokens=300, completion_tokens=0, total_tokens=300),
        ),
    )


def metadata(**extra: Any) -> ReviewMetadata:
    fields: dict[str, Any] = {
        "repository": "/home/developer/projects/zadig",
        "mode": "range",
        "from": "origin/main",
        "to": "HEAD",
        "base_sha": "1" * 40,
        "head_sha": "2" * 40,
        "model": ModelInfo(protocol="openai", name="gpt-test", endpoint="http://127.0.0.1:9/v1"),
        "tool_version": "0.1.0",
        "started_at": "2026-11-30T12:00:00Z",
        "finished_at": "2026-11-30T12:01:05Z",
    }
    fields.update(extra)
    return ReviewMetadata.model_validate(fields)


def make_outcome(**extra: Any) -> ReviewOutcome:
    fields: dict[str, Any] = {
        "review_id": "20261130T120000Z-3f2a9c1d",
        "status": "complete",
        "exit_code": 1,
        "metadata": metadata(),
        "files_changed": 5,
        "files": (
            ReviewedFile(path="src/app.py", rule=PY_RULE),
            ReviewedFile(path="src/util.py", rule=PY_RULE),
            ReviewedFile(path="api/handlers.py", rule=USER_RULE),
        ),
        "excluded": (
            ExcludedFile(path="logo.png", reason="binary"),
            ExcludedFile(path="tests/test_app.py", reason="default_path", detail="tests/**"),
        ),
        "chunks": 4,
        "tool_calls": 3,
        "findings": all_findings(),
        "dropped": all_dropped(),
        "warnings": (
            ReviewWarning("rule_reference", "reference docs/x.md not found", "api/handlers.py"),
            ReviewWarning("compression_disabled", "summary did not shrink"),
        ),
        "usage": UsageTotals(
            prompt_tokens=1300, completion_tokens=50, total_tokens=1350, requests=3
        ),
        "duration_ms": 65000,
        "process": process_records(),
    }
    fields.update(extra)
    return ReviewOutcome(**fields)


def incomplete_outcome() -> ReviewOutcome:
    return make_outcome(
        status="incomplete",
        exit_code=2,
        errors=(ReviewWarning("filter_failed", "review filter answered twice without JSON"),),
    )


def empty_outcome() -> ReviewOutcome:
    return make_outcome(
        exit_code=0,
        files_changed=0,
        files=(),
        excluded=(),
        chunks=0,
        tool_calls=0,
        findings=(),
        dropped=(),
        warnings=(),
        usage=UsageTotals(),
        duration_ms=12,
        process=(),
    )


def hostile_outcome() -> ReviewOutcome:
    hostile = finding(
        0,
        Severity.HIGH,
        Category.SECURITY,
        path=HOSTILE_PATH,
        title=HOSTILE_TITLE,
        problem="Problem with ``` fence\n```\n<img src=x onerror=alert(1)>\n| a | b |",
        evidence="\x1b]8;;http://evil\x07link\x1b]8;;\x07",
        existing_code="x = '```'\n````\n~~~\n",
        rule_id="rule`|<b>",
    )
    return make_outcome(
        findings=(hostile,),
        dropped=(Dropped(path=HOSTILE_PATH, title=HOSTILE_TITLE, reason=DropReason.FILTERED),),
        files=(ReviewedFile(path=HOSTILE_PATH, rule=PY_RULE),),
        warnings=(ReviewWarning("git", "odd name\x1b[1A\rFAKE LINE", HOSTILE_PATH),),
    )


OUTCOMES = {
    "realistic": make_outcome,
    "incomplete": incomplete_outcome,
    "empty": empty_outcome,
    "hostile": hostile_outcome,
}


def validate_report(report: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(report_schema()).validate(report)


def sarif_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((DATA / "sarif-schema-2.1.0.json").read_text("utf-8"))
    return schema


class TtyStream(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


PARSER = MarkdownIt("commonmark").enable("table")


def plain(inline: Token) -> str:
    """The text a reader sees in an inline token."""
    out = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append("\n")
    return "".join(out)
