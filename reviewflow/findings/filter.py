"""Validation steps 5-6: the Review Filter may delete a placed candidate the diff disproves."""

from __future__ import annotations

import json
from collections.abc import Collection

from reviewflow.findings.answers import (
    AnswerError,
    Question,
    ask,
    listing_prompts,
    parse_array,
    text_field,
)
from reviewflow.findings.models import DropReason, FileFindings, PlacedCandidate
from reviewflow.findings.normalize import dropped
from reviewflow.findings.relocate import diff_text
from reviewflow.git.models import FileDiff
from reviewflow.review.records import Send

FILTER_FORMAT = '["c-1"]'
FILTER_WRAPPERS = ("delete", "deleted", "ids")


def filter_file(file: FileDiff, found: FileFindings, send: Send) -> FileFindings:
    """Ask the Review Filter which placed candidates the diff disproves and drop those; on
    failure or an unusable answer keep every candidate and mark the file incomplete."""
    if not found.placed:
        return found
    system, user = listing_prompts(
        "filter", FILTER_FORMAT, file.path, diff_text(file), _listing(found.placed)
    )
    question = Question(
        stage="filter",
        path=file.path,
        system=system,
        user=user,
        answer_format=FILTER_FORMAT,
        warning_code="review_filter_failed",
        what=f"review filter for {file.path}",
    )
    known = {p.id for p in found.placed}
    asked = ask(question, lambda text: _parse_deletions(text, known), send)
    records = (*found.records, *asked.records)
    if asked.value is None:
        warnings = (*found.warnings, *asked.warnings)
        return found.model_copy(
            update={"complete": False, "warnings": warnings, "records": records}
        )
    deletions = asked.value
    kept = tuple(p for p in found.placed if p.id not in deletions)
    removed = tuple(
        dropped(found.path or file.path, p.candidate, DropReason.FILTERED, deletions[p.id])
        for p in found.placed
        if p.id in deletions
    )
    return found.model_copy(
        update={"placed": kept, "dropped": (*found.dropped, *removed), "records": records}
    )


def _listing(placed: tuple[PlacedCandidate, ...]) -> str:
    rows = [
        {
            "id": p.id,
            "severity": p.candidate.severity,
            "category": p.candidate.category,
            "start_line": p.start_line,
            "end_line": p.end_line,
            "existing_code": p.existing_code,
            "title": p.candidate.title,
            "problem": p.candidate.problem,
            "evidence": p.candidate.evidence,
        }
        for p in placed
    ]
    return json.dumps(rows, indent=1, ensure_ascii=False)


def _parse_deletions(text: str, known: Collection[str]) -> dict[str, str | None]:
    """IDs to delete, each with the filter's reason when it gave one."""
    deletions: dict[str, str | None] = {}
    for item in parse_array(text, FILTER_WRAPPERS):
        entry = {"id": item} if isinstance(item, str) else item
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise AnswerError("every entry must be a candidate ID string")
        if entry["id"] not in known:
            raise AnswerError(f"unknown candidate ID {entry['id']!r}")
        deletions[entry["id"]] = text_field(entry, "reason")
    return deletions
