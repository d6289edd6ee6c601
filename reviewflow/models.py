"""Small domain records shared by several stages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReviewWarning:
    """A non-fatal problem worth reporting (`code` is a stable snake_case identifier)."""

    code: str
    message: str
    path: str | None = None
