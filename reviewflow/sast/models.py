"""What the pre-scan hands on: trimmed semgrep results, per file, on the change's added lines."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SastResult(BaseModel):
    """One semgrep result, trimmed to what the review needs (a hint, never a finding)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule_id: str
    path: str
    start_line: int
    end_line: int
    severity: str  # semgrep's, lower-cased: error, warning, info
    message: str

    def touches(self, lines: frozenset[int]) -> bool:
        """Whether any line of the result is one of `lines` (the file's added lines)."""
        return any(line in lines for line in range(self.start_line, self.end_line + 1))


class SastScan(BaseModel):
    """The pre-scan of one change: results on added lines by path, and how it ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    results: dict[str, tuple[SastResult, ...]]
    files: int  # files scanned (their new side)
    reused: int  # of them, answered from the cache
    semgrep_version: str
    rules: str  # where the rules came from: bundled, plus the user's directory (and its ref)
    rules_digest: str
    duration_ms: int

    def for_path(self, path: str) -> tuple[SastResult, ...]:
        return self.results.get(path, ())

    @property
    def total(self) -> int:
        return sum(len(found) for found in self.results.values())
