"""Domain records shared by several stages: they live low so no stage imports one above it.

`Candidate` is what the tool loop collects from `code_comment`, as the model gave it; the
findings stages place, filter and validate candidates into `reviewflow.findings.models.Finding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

# The most characters a finding's text field keeps (also in the report's JSON Schema): a model
# that writes megabytes into one field must not make megabyte reports or consoles.
TEXT_LIMITS = {
    "file": 1_000,
    "rule_id": 200,
    "title": 300,
    "problem": 4_000,
    "evidence": 4_000,
    "suggestion": 4_000,
    "existing_code": 16_000,
}
ANCHOR_LIMIT = 200
"""The most characters of a candidate's `anchor` kept (it is parsed, never reported)."""


def cut_text(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its start and a marker saying how long it
    was, `limit` characters in all (so cutting again changes nothing)."""
    if len(text) <= limit:
        return text
    marker = f" […cut: {len(text)} characters in all]"
    return text[: max(0, limit - len(marker))] + marker


def cut_fields(value: Any, field: str) -> Any:
    """A text field's value bounded by `TEXT_LIMITS` (anything else unchanged)."""
    return cut_text(value, TEXT_LIMITS[field]) if isinstance(value, str) else value


class Severity(StrEnum):
    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Category(StrEnum):
    """The six categories a finding may have (000 §9)."""

    CORRECTNESS = "correctness"
    SECURITY = "security"
    CONCURRENCY = "concurrency"
    PERFORMANCE = "performance"
    COMPATIBILITY = "compatibility"
    TESTS = "tests"


@dataclass(frozen=True, slots=True)
class ReviewWarning:
    """A non-fatal problem worth reporting (`code` is a stable snake_case identifier)."""

    code: str
    message: str
    path: str | None = None


class Candidate(BaseModel):
    """One `code_comment` as the model sent it: nothing here is trusted or validated yet.

    Text fields are the model's strings (empty when missing or not text); line numbers are
    ints when the model gave an integer (or an integer string), else None; `confidence` is a
    float when the model gave a number, else None; `anchor` is the tag text the model gave
    (`reviewflow.anchors` parses it). `severity` and `category` are the raw
    strings: normalizing them (and rejecting unknown ones) is the findings stage's job.
    `path` is the file the session reviewed; `file` is the path the model named.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    file: str
    severity: str = ""
    category: str = ""
    rule_id: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    existing_code: str | None = None
    anchor: str | None = None  # the model's line tags (`L42#a3f-L45#b12`), unparsed
    title: str = ""
    problem: str = ""
    evidence: str = ""
    suggestion: str = ""
    confidence: float | None = None
    chunk: int = 0

    @field_validator(*TEXT_LIMITS, mode="before")
    @classmethod
    def _bounded(cls, value: Any, info: Any) -> Any:
        return cut_fields(value, info.field_name)

    @field_validator("anchor", mode="before")
    @classmethod
    def _short(cls, value: Any) -> Any:
        return cut_text(value, ANCHOR_LIMIT) if isinstance(value, str) else value
