"""Validated findings and the candidates that were dropped on the way (and why)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from reviewflow.models import TEXT_LIMITS, Candidate, Category, Severity, cut_fields
from reviewflow.review.records import StageResult


class DropReason(StrEnum):
    """Why a candidate did not become a finding; every dropped candidate is reported."""

    UNPLACED = "unplaced"  # existing_code/lines not in a changed hunk, relocation failed too
    OUTSIDE_CHANGE = "outside_change"  # a path that is not a reviewed file of this change
    UNCHANGED_LINE = "unchanged_line"  # lines that are not added lines of the change
    BELOW_THRESHOLD = "below_threshold"  # confidence < review.confidence_threshold
    UNKNOWN_CATEGORY = "unknown_category"
    INVALID_SEVERITY = "invalid_severity"
    INVALID_CONFIDENCE = "invalid_confidence"  # missing, not a number, outside 0..1
    INCOMPLETE = "incomplete"  # missing title or problem
    DUPLICATE = "duplicate"  # same fingerprint as `duplicate_of`
    FILTERED = "filtered"  # deleted by the review filter (the diff disproves it)
    DISMISSED = "dismissed"  # on its pull/merge request or in dismissed.json (`detail`: who, why)
    NOT_VERIFIED = "not_verified"  # its verification score < review.confidence_threshold
    SUPPRESSED = "suppressed"  # a `reviewflow: ignore` comment (`detail`: its path:line)
    NO_AGREEMENT = "no_agreement"  # found by fewer than review.min_agreement passes
    SILENCE_RULE = "silence_rule"  # a rules file's `silence[]` entry (`rule`: which one)


class PlacedBy(StrEnum):
    """How a finding was placed on its lines (the report's `placed_by`), most certain first."""

    ANCHOR = "anchor"  # the line tags the model copied from the diff, hashes checked
    EXACT = "exact"  # the quoted code, verbatim (trailing whitespace aside)
    WHITESPACE = "whitespace"  # the quoted code, whitespace and blank lines ignored
    MARKERS = "markers"  # the quoted code was a diff quote: its +/- markers or tags removed
    PARTIAL = "partial"  # a one-line quote found inside one added line
    LINES = "lines"  # the line numbers alone
    RELOCATION = "relocation"  # the code a Relocation request gave


class PlacedCandidate(BaseModel):
    """A candidate with real new-side lines in a changed hunk, and its temporary ID (`c-0`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    candidate: Candidate
    start_line: int
    end_line: int
    existing_code: str
    placed_by: PlacedBy
    occurrence: int = 0  # earlier runs of the same code in the file's new side


class VerificationScore(BaseModel):
    """A finding's Chain-of-Verification outcome: its score (1-10) and how many questions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    score: int
    questions: int


class Finding(BaseModel):
    """A validated finding, as reports show it. `id` is stable: `F` + fingerprint prefix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    fingerprint: str
    severity: Severity
    category: Category
    rule_id: str | None = None
    path: str
    start_line: int
    end_line: int
    title: str
    problem: str
    evidence: str = ""
    suggestion: str = ""
    confidence: float
    existing_code: str
    placed_by: PlacedBy
    model_confidence: float | None = None  # verified: the model's own, before the score
    verification: VerificationScore | None = None  # verified (`--verify`)
    agreement: str | None = (
        None  # several passes (`review.passes`): "2/3", the passes that found it
    )
    # several passes: the fingerprints of the other passes' findings of its cluster (placed or
    # worded otherwise); a dismissal of any of them silences it, and of it silences them
    cluster_fingerprints: tuple[str, ...] = ()

    @field_validator(*(TEXT_LIMITS.keys() - {"file"}), mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: Any) -> Any:
        return cut_fields(value, info.field_name)

    def cache_identity(self) -> dict[str, Any]:
        """What a model stage given the finding (verification, localization) hashes: all of it,
        its agreement and cluster only in a review of several passes (so a one-pass review's
        keys are those of a review before passes; a localized finding carries them back)."""
        single = {"agreement"} if self.agreement is None else set()
        alone = set() if self.cluster_fingerprints else {"cluster_fingerprints"}
        return self.model_dump(mode="json", exclude=(single | alone) or None)

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """Its fingerprint, then its cluster's (`cluster_fingerprints`): every identity a
        dismissal of it may have recorded."""
        return (self.fingerprint, *self.cluster_fingerprints)


class Dropped(BaseModel):
    """A candidate that was left out, with the reason (and the finding it duplicates)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    title: str
    reason: DropReason
    duplicate_of: str | None = None
    detail: str | None = None
    rule: str | None = None  # silence_rule: the rule that silenced it (`rules.json silence[0]`)
    # dismissed: the fingerprint the dismissal was recorded for, when not the finding's own (a
    # finding of its cluster, as another pass or an earlier review placed it)
    dismissed_as: str | None = None
    finding: Finding | None = None  # silenced or dismissed: the finding (SARIF suppressions)


class FileFindings(StageResult):
    """One file after relocation and the review filter: placed candidates and drops so far.

    `changed_lines` are the file's added (new-side) lines, so finalize can revalidate.
    """

    placed: tuple[PlacedCandidate, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    changed_lines: tuple[int, ...] = ()
