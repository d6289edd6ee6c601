"""Pieces of a `ReviewOutcome` taken from the change's scope (shared with the preview)."""

from __future__ import annotations

from datetime import UTC, datetime

from reviewflow.config import ModelSettings
from reviewflow.report.outcome import ExcludedFile, ModelInfo, ReviewedFile, ReviewMetadata
from reviewflow.report.preview import change_metadata, rule_record
from reviewflow.request import ReviewRequest
from reviewflow.select.filtering import Selection
from reviewflow.select.scope import Scope


def utc_iso(moment: datetime) -> str:
    """An ISO 8601 UTC timestamp to the second, e.g. `2026-11-30T23:35:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def review_metadata(
    scope: Scope,
    request: ReviewRequest,
    model: ModelSettings,
    language: str,
    started_at: datetime,
    finished_at: datetime,
) -> ReviewMetadata:
    """The report's metadata; the model is named by protocol, name and endpoint (no key)."""
    return ReviewMetadata.model_validate(
        {
            **change_metadata(scope, request),
            "model": ModelInfo(
                protocol=model.protocol.value, name=model.name, endpoint=model.effective_endpoint
            ),
            "language": language,
            "started_at": utc_iso(started_at),
            "finished_at": utc_iso(finished_at),
        }
    )


def reviewed_files(selection: Selection) -> tuple[ReviewedFile, ...]:
    return tuple(
        ReviewedFile(path=item.file.path, rule=rule_record(item.rule)) for item in selection.kept
    )


def excluded_files(selection: Selection) -> tuple[ExcludedFile, ...]:
    return tuple(
        ExcludedFile(path=ex.path, reason=ex.reason.value, detail=ex.detail)
        for ex in selection.excluded
    )
