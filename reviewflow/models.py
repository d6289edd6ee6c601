"""Domain records shared by several stages: they live low so no stage imports one above it.

`Candidate` is what the tool loop collects from `code_comment`, as the model gave it; the
findings stages place, filter and validate candidates into `reviewflow.findings.models.Finding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


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
    float when the model gave a number, else None. `severity` and `category` are the raw
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
    title: str = ""
    problem: str = ""
    evidence: str = ""
    suggestion: str = ""
    confidence: float | None = None
    chunk: int = 0
