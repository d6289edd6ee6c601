"""Validation steps 7-8: revalidate, threshold, fingerprint, deduplicate, aggregate; the gate."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from reviewflow.config import ReviewSettings
from reviewflow.findings.models import Dropped, DropReason, FileFindings, Finding, PlacedCandidate
from reviewflow.findings.normalize import Problem, check_fields, dropped
from reviewflow.models import Category, ReviewWarning, Severity
from reviewflow.review.records import RequestRecord

SEVERITY_RANK = {severity: rank for rank, severity in enumerate(Severity)}  # critical: 0


class Finalized(BaseModel):
    """The review's findings (sorted: severity, path, line), every drop, warnings, completeness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    findings: tuple[Finding, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    warnings: tuple[ReviewWarning, ...] = ()
    complete: bool = True
    records: tuple[RequestRecord, ...] = ()  # requests made after finalize (verification)


def fingerprint(path: str, code: str, category: Category, occurrence: int = 0) -> str:
    """Stable identity of a finding: path, whitespace-normalized code and category (no line
    numbers, none of the model's wording); `occurrence` tells repeats of the same code apart."""
    lines = (" ".join(line.split()) for line in code.splitlines())
    normalized = "\n".join(line for line in lines if line)
    repeat = f"\0{occurrence}" if occurrence else ""
    text = f"{path}\0{normalized}\0{category.value}{repeat}"
    return hashlib.sha256(text.encode()).hexdigest()


def finalize(
    files: Sequence[FileFindings], settings: ReviewSettings, earlier: Sequence[Dropped] = ()
) -> Finalized:
    """Revalidate every placed candidate, drop those below the confidence threshold, then
    fingerprint and deduplicate. `earlier` are drops made before (`group_candidates`')."""
    drops = [*earlier, *(d for f in files for d in f.dropped)]
    findings: list[Finding] = []
    for file in files:
        for placed in file.placed:
            outcome = _validate(file, placed, settings.confidence_threshold)
            if isinstance(outcome, Finding):
                findings.append(outcome)
            else:
                drops.append(outcome)
    unique, duplicates = _deduplicate(findings)
    return Finalized(
        findings=tuple(sorted(unique, key=finding_order)),
        dropped=(*drops, *duplicates),
        warnings=tuple(w for f in files for w in f.warnings),
        complete=all(f.complete for f in files),
    )


def _validate(file: FileFindings, placed: PlacedCandidate, threshold: float) -> Finding | Dropped:
    candidate = placed.candidate
    if file.path is None:
        return dropped(candidate.path, candidate, DropReason.OUTSIDE_CHANGE, "no reviewed file")
    if not _on_changed_line(file.changed_lines, placed.start_line, placed.end_line):
        where = f"lines {placed.start_line}-{placed.end_line} add nothing"
        return dropped(file.path, candidate, DropReason.UNCHANGED_LINE, where)
    fields = check_fields(candidate)
    if isinstance(fields, Problem):
        return dropped(file.path, candidate, *fields)
    if fields.confidence < threshold:
        detail = f"confidence {fields.confidence:g} < review.confidence_threshold {threshold:g}"
        return dropped(file.path, candidate, DropReason.BELOW_THRESHOLD, detail)
    digest = fingerprint(file.path, placed.existing_code, fields.category, placed.occurrence)
    return Finding(
        id=f"F{digest[:12]}",
        fingerprint=digest,
        severity=fields.severity,
        category=fields.category,
        rule_id=(candidate.rule_id or "").strip() or None,
        path=file.path,
        start_line=placed.start_line,
        end_line=placed.end_line,
        title=candidate.title.strip(),
        problem=candidate.problem.strip(),
        evidence=candidate.evidence.strip(),
        suggestion=candidate.suggestion.strip(),
        confidence=fields.confidence,
        existing_code=placed.existing_code,
        placed_by=placed.placed_by,
    )


def _on_changed_line(changed: Sequence[int], start: int, end: int) -> bool:
    """Whether start..end (a valid range) holds an added line; `changed` is sorted."""
    if not 1 <= start <= end:
        return False
    at = bisect.bisect_left(changed, start)
    return at < len(changed) and changed[at] <= end


def _deduplicate(findings: Sequence[Finding]) -> tuple[list[Finding], list[Dropped]]:
    """One finding per fingerprint: the most severe, then most confident, then the first."""
    best: dict[str, Finding] = {}
    for finding in findings:
        kept = best.get(finding.fingerprint)
        if kept is None or _strength(finding) < _strength(kept):
            best[finding.fingerprint] = finding
    duplicates = [
        Dropped(
            path=f.path,
            title=f.title,
            reason=DropReason.DUPLICATE,
            duplicate_of=best[f.fingerprint].id,
            detail=f"lines {f.start_line}-{f.end_line}",
        )
        for f in findings
        if best[f.fingerprint] is not f
    ]
    return list(best.values()), duplicates


def _strength(finding: Finding) -> tuple[int, float]:
    return SEVERITY_RANK[finding.severity], -finding.confidence


def finding_order(finding: Finding) -> tuple[int, str, int, int, str]:
    return (
        SEVERITY_RANK[finding.severity],
        finding.path,
        finding.start_line,
        finding.end_line,
        finding.fingerprint,
    )


def gate(findings: Sequence[Finding], fail_on: Sequence[Severity], complete: bool) -> int:
    """The exit code: 2 if any stage was incomplete, 1 if a finding matches `fail_on`, else 0."""
    if not complete:
        return 2
    failing = set(fail_on)
    return 1 if any(f.severity in failing for f in findings) else 0
