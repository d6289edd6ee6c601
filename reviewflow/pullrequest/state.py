"""What the summary comment remembers between runs: the head it reviewed and the request's
open findings, so a later run reviews only what is new and still describes the whole request."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from reviewflow.models import Severity

STATE_VERSION = 1
MAX_REMEMBERED = 400  # open findings kept in the summary's marker (GitHub bodies: 65,536 chars)


class Placed(Protocol):
    """A finding where a run placed it (`reviewflow.findings.models.Finding` is one)."""

    @property
    def fingerprint(self) -> str: ...
    @property
    def severity(self) -> Severity: ...
    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def title(self) -> str: ...


class PriorFinding(BaseModel):
    """An open finding of an earlier run, where it was at that run's head."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: str
    severity: Severity
    path: str
    start_line: int
    end_line: int
    title: str
    # a review of several passes: its cluster's other fingerprints (kept in its comment's
    # marker, not in the summary's state), so a later review keeping another member of the
    # cluster finds its thread, and a dismissal of the thread silences that member; None: none
    cluster_fingerprints: tuple[str, ...] | None = None

    @classmethod
    def of(cls, finding: Placed) -> PriorFinding:
        return cls(
            fingerprint=finding.fingerprint,
            severity=finding.severity,
            path=finding.path,
            start_line=finding.start_line,
            end_line=finding.end_line,
            title=finding.title[:120],
            cluster_fingerprints=tuple(getattr(finding, "cluster_fingerprints", ())) or None,
        )

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """Its fingerprint, then its cluster's."""
        return (self.fingerprint, *(self.cluster_fingerprints or ()))


class SummaryState(BaseModel):
    """The summary's hidden state: the base and head reviewed, the open findings at that head."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: int = STATE_VERSION
    base: str
    head: str
    findings: tuple[PriorFinding, ...] = ()
