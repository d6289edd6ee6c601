"""The Markdown report (and the shorter summary the Prefect artifact shows).

Templates in `templates/` receive only text this module has already made inert (`mdsafe`):
they add structure, never untrusted characters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from reviewflow.findings.models import Finding
from reviewflow.findings.silence import silenced_line
from reviewflow.models import ReviewWarning
from reviewflow.prompts import render
from reviewflow.report.mdsafe import md_code, md_inline, md_text
from reviewflow.report.outcome import (
    ReviewOutcome,
    carried_line,
    files_finished,
    finding_location,
    incomplete_reasons,
    severity_summary,
)
from reviewflow.report.wording import change_words, counted

TEMPLATES = Path(__file__).parent / "templates"


def _finding_view(finding: Finding) -> dict[str, Any]:
    return {
        "id": md_inline(finding.id),
        "severity": finding.severity.value.capitalize(),
        "location": md_inline(finding_location(finding)),
        "title": md_inline(finding.title) or "\\(untitled\\)",
        "category": finding.category.value,
        "rule_id": md_inline(finding.rule_id) if finding.rule_id else None,
        "confidence": _confidence(finding),
        "agreement": finding.agreement,
        "problem": md_text(finding.problem),
        "evidence": md_text(finding.evidence),
        "suggestion": md_text(finding.suggestion),
        "code": md_code(finding.existing_code) if finding.existing_code.strip() else None,
    }


def _confidence(finding: Finding) -> str:
    """`0.80`, and for a verified finding its score and the model's own confidence."""
    shown = f"{finding.confidence:.2f}"
    check = finding.verification
    if check is None or finding.model_confidence is None:
        return shown
    asked = counted(check.questions, "question")
    return f"{shown} (verified {check.score}/10, {asked}; model {finding.model_confidence:.2f})"


def _groups(outcome: ReviewOutcome) -> list[dict[str, Any]]:
    """One group per file (the file with the most severe finding first), with its counts."""
    groups = []
    for path, findings in outcome.findings_by_file():
        views = [_finding_view(f) for f in findings]
        summary = severity_summary(findings)
        groups.append({"path": md_inline(path), "summary": summary, "findings": views})
    return groups


def _change_line(outcome: ReviewOutcome) -> str:
    meta = outcome.metadata
    shas = " → ".join(md_inline(sha[:12]) for sha in (meta.base_sha, meta.head_sha) if sha)
    text = f"{md_inline(change_words(meta.mode))} {md_inline(meta.repository)}"
    return f"{text} ({shas})" if shas else text


def _summary_view(outcome: ReviewOutcome) -> dict[str, Any]:
    meta = outcome.metadata
    endpoint = f" at {md_inline(meta.model.endpoint)}" if meta.model.endpoint else ""
    return {
        "review_id": md_inline(outcome.review_id),
        "status": outcome.status,
        "exit_code": outcome.exit_code,
        "change": _change_line(outcome),
        "model": f"{md_inline(meta.model.name)} ({meta.model.protocol}{endpoint})",
        "counts": outcome.severity_counts(),
        "total": len(outcome.findings),
        "files_changed": outcome.files_changed,
        "files_reviewed": files_finished(outcome),
        "files_incomplete": len(outcome.incomplete_files),
        "incomplete_reasons": sorted({i["reason"] for i in incomplete_reasons(outcome)}),
        "files_excluded": len(outcome.excluded),
        "work": ", ".join(
            (
                counted(outcome.chunks, "chunk"),
                counted(outcome.usage.requests, "model request"),
                counted(outcome.tool_calls, "tool call"),
            )
        ),
        "dropped_count": len(outcome.dropped),
        "silenced": silenced_line(outcome.dropped, outcome.warnings),
        "errors": [_problem_view(e) for e in outcome.errors],
        "carried_line": carried_line(outcome),
        "carried": [
            f"**{c.severity.value}** {md_inline(finding_location(c))}: {md_inline(c.title)}"
            for c in (outcome.pull_request.carried if outcome.pull_request else ())
        ],
    }


def _problem_view(item: ReviewWarning) -> dict[str, str | None]:
    return {
        "code": md_inline(item.code),
        "message": md_inline(item.message),
        "path": md_inline(item.path) if item.path else None,
    }


def _rules_view(outcome: ReviewOutcome) -> list[dict[str, str]]:
    return [
        {
            "name": md_inline(rule["name"] or rule["layer"]),
            "source": md_inline(rule["source"]),
            "pattern": md_inline(rule["pattern"]),
            "merged": md_inline(rule["merged_with"] or ""),
            "files": md_inline(", ".join(rule["files"])),
        }
        for rule in outcome.applied_rules()
    ]


def tool_index(outcome: ReviewOutcome) -> list[dict[str, Any]]:
    """Tool calls by tool name: how many, how many failed, over how many files."""
    calls: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    files: dict[str, set[str]] = {}
    for record in outcome.process:
        for call in record.tool_calls:
            calls[call.name] += 1
            errors[call.name] += call.status == "error"
            files.setdefault(call.name, set()).add(record.path or "")
    return [
        {"tool": name, "calls": calls[name], "errors": errors[name], "files": len(files[name])}
        for name in sorted(calls)
    ]


def _details_view(outcome: ReviewOutcome) -> dict[str, Any]:
    return {
        "groups": _groups(outcome),
        "dropped": [
            {
                "path": md_inline(d.path),
                "title": md_inline(d.title),
                "reason": d.reason.value,
                "duplicate_of": md_inline(d.duplicate_of or ""),
                "detail": md_inline(d.detail or ""),
            }
            for d in outcome.dropped
        ],
        "excluded": [
            {"path": md_inline(e.path), "reason": md_inline(e.reason)} for e in outcome.excluded
        ],
        "rules": _rules_view(outcome),
        "warnings": [_problem_view(w) for w in outcome.warnings],
        "tools": [{**t, "tool": md_inline(t["tool"])} for t in tool_index(outcome)],
        "usage": outcome.usage.model_dump(),
        "duration_s": f"{outcome.duration_ms / 1000:.1f}",
    }


def summary_markdown(outcome: ReviewOutcome) -> str:
    """A short Markdown summary: status, counts by severity, the change and the model."""
    return render(TEMPLATES, "summary.md.j2", **_summary_view(outcome))


def render_markdown(outcome: ReviewOutcome) -> str:
    """The full Markdown report: summary, findings per file, dropped candidates, rules,
    a tool index and usage."""
    return render(TEMPLATES, "report.md.j2", **_summary_view(outcome), **_details_view(outcome))
