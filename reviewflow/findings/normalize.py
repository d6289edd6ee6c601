"""Deterministic normalization of what the model named: paths, severities, categories."""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import NamedTuple

from reviewflow.findings.models import Dropped, DropReason
from reviewflow.models import Candidate, Category, Severity

CATEGORY_ALIASES: dict[str, Category] = {
    "bug": Category.CORRECTNESS,
    "bugs": Category.CORRECTNESS,
    "logic": Category.CORRECTNESS,
    "error-handling": Category.CORRECTNESS,
    "resource-management": Category.CORRECTNESS,
    "resource-leak": Category.CORRECTNESS,
    "perf": Category.PERFORMANCE,
    "efficiency": Category.PERFORMANCE,
    "vulnerability": Category.SECURITY,
    "vuln": Category.SECURITY,
    "sec": Category.SECURITY,
    "race": Category.CONCURRENCY,
    "race-condition": Category.CONCURRENCY,
    "thread-safety": Category.CONCURRENCY,
    "compat": Category.COMPATIBILITY,
    "breaking-change": Category.COMPATIBILITY,
    "test": Category.TESTS,
    "testing": Category.TESTS,
    "missing-tests": Category.TESTS,
}
"""Common model values mapped onto 000's six categories (keys in `_token` form)."""

_SEPARATORS = re.compile(r"[\s_]+")
_DIFF_PREFIX = ("a/", "b/")


def _token(value: str) -> str:
    return _SEPARATORS.sub("-", value.strip().lower())


def normalize_category(value: str) -> Category | None:
    """The category `value` names (lowercased, aliases applied); None when unknown."""
    token = _token(value)
    try:
        return Category(token)
    except ValueError:
        return CATEGORY_ALIASES.get(token)


def normalize_severity(value: str) -> Severity | None:
    """The severity `value` names (case and surrounding space ignored); None when unknown."""
    try:
        return Severity(value.strip().lower())
    except ValueError:
        return None


def normalize_path(named: str, reviewed: Collection[str]) -> str:
    """The repository path a model meant by `named`: backslashes, `./` and a diff's `a/`/`b/`
    prefix removed (the prefix only where the prefixed path is not itself reviewed). A reviewed
    path named exactly is that path (a name shown with `\\xNN`, a backslash in a name)."""
    if named.strip() in reviewed:
        return named.strip()
    path = re.sub(r"/+", "/", named.strip().replace("\\", "/"))
    while path.startswith("./"):
        path = path[2:]
    if path not in reviewed and path.startswith(_DIFF_PREFIX) and path[2:] in reviewed:
        return path[2:]
    return path


class Fields(NamedTuple):
    """A candidate's severity, category and confidence, validated."""

    severity: Severity
    category: Category
    confidence: float


class Problem(NamedTuple):
    """Why a candidate is unusable, and the detail a report shows."""

    reason: DropReason
    detail: str


def check_fields(candidate: Candidate) -> Fields | Problem:
    """The candidate's validated severity, category and confidence, or why they are unusable
    (a missing title or problem too)."""
    severity = normalize_severity(candidate.severity)
    if severity is None:
        accepted = ", ".join(s.value for s in Severity)
        return Problem(
            DropReason.INVALID_SEVERITY, f"severity {candidate.severity!r}; accepted: {accepted}"
        )
    category = normalize_category(candidate.category)
    if category is None:
        accepted = ", ".join(c.value for c in Category)
        return Problem(
            DropReason.UNKNOWN_CATEGORY, f"category {candidate.category!r}; accepted: {accepted}"
        )
    confidence = candidate.confidence
    if confidence is None or not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        return Problem(
            DropReason.INVALID_CONFIDENCE, f"confidence {confidence!r}; accepted: 0 to 1"
        )
    if not candidate.title.strip() or not candidate.problem.strip():
        return Problem(DropReason.INCOMPLETE, "a finding needs a title and a problem")
    return Fields(severity, category, confidence)


def dropped(
    path: str,
    candidate: Candidate,
    reason: DropReason,
    detail: str | None = None,
    duplicate_of: str | None = None,
) -> Dropped:
    """The report record of a candidate left out."""
    return Dropped(
        path=path,
        title=candidate.title.strip(),
        reason=reason,
        detail=detail,
        duplicate_of=duplicate_of,
    )
