"""Content of the Prefect artifacts a review publishes (the flow calls Prefect with it)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from reviewflow.report.location import flatten_repo_path
from reviewflow.report.markdown import summary_markdown
from reviewflow.report.mdsafe import md_inline
from reviewflow.report.outcome import ReviewOutcome, finding_location
from reviewflow.report.textsafe import json_safe

MAX_KEY = 100
TABLE_ROWS = 200  # what the Prefect UI renders at once; every finding is in the reports
_NOT_KEY = re.compile(r"[^a-z0-9]+")

__all__ = ["artifact_key", "artifact_summary", "findings_table", "summary_markdown"]


def artifact_key(repository: str, mode: str) -> str:
    """A stable artifact key for a repository and mode: lowercase letters, digits and dashes,
    at most 100 characters (long names keep their end and a short hash of the whole)."""
    digest = hashlib.sha256(f"{repository}\0{mode}".encode("utf-8", "surrogateescape"))
    tail = f"-{_NOT_KEY.sub('-', mode.lower()).strip('-') or 'review'}-{digest.hexdigest()[:8]}"
    name = _NOT_KEY.sub("-", flatten_repo_path(repository).lower()).strip("-") or "repository"
    room = MAX_KEY - len("reviewflow-") - len(tail)
    return f"reviewflow-{name[-room:].lstrip('-')}{tail}"


def artifact_summary(outcome: ReviewOutcome, written: Mapping[str, str]) -> str:
    """The summary artifact: the review's summary, and where every finding is when the
    findings table shows only the `TABLE_ROWS` most severe."""
    text = summary_markdown(outcome)
    total = len(outcome.findings)
    if total <= TABLE_ROWS:
        return text
    where = ", ".join(f"{kind} {md_inline(path)}" for kind, path in written.items())
    full = f"every finding is in the reports ({where})" if where else "no report was written"
    return f"{text}\nThe findings table shows the {TABLE_ROWS} most severe of {total}; {full}.\n"


def findings_table(outcome: ReviewOutcome) -> list[dict[str, Any]]:
    """One row per finding, most severe first, at most `TABLE_ROWS`, for a Prefect table
    artifact."""
    rows: list[dict[str, Any]] = json_safe(
        [
            {
                "severity": f.severity.value,
                "location": finding_location(f),
                "title": f.title,
                "category": f.category.value,
                "rule": f.rule_id or "",
                "confidence": f.confidence,
                "id": f.id,
            }
            for f in outcome.sorted_findings()[:TABLE_ROWS]
        ]
    )
    return rows
