"""Domain records shared by several stages: they live low so no stage imports one above it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


@dataclass(frozen=True, slots=True)
class ReviewWarning:
    """A non-fatal problem worth reporting (`code` is a stable snake_case identifier)."""

    code: str
    message: str
    path: str | None = None
