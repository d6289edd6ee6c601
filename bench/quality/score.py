"""Scoring: which golden comments a review caught, and precision, recall and F1.

A golden comment with a file and a line (SWR-Bench's) is caught first, without a model, by a
finding on the same file whose lines come within WINDOW lines of it. Every golden comment left
is put to the judge against every finding (the Martian benchmark's pairing). Then:

- recall = golden comments caught / golden comments,
- precision = findings that caught at least one golden comment / findings,
- F1 = their harmonic mean (0 when both are 0).

Totals add the counts of every case first (micro averages), so a case with many findings
weighs more than one with few.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.quality.cases import Golden
from bench.quality.judge import Verdict

WINDOW = 5


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    start_line: int | None
    end_line: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Counts:
    golden: int
    caught: int
    findings: int
    matched_findings: int

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.golden + other.golden,
            self.caught + other.caught,
            self.findings + other.findings,
            self.matched_findings + other.matched_findings,
        )

    @property
    def precision(self) -> float | None:
        return self.matched_findings / self.findings if self.findings else None

    @property
    def recall(self) -> float | None:
        return self.caught / self.golden if self.golden else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None and r is None:
            return None
        p, r = p or 0.0, r or 0.0
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "golden": self.golden,
            "caught": self.caught,
            "findings": self.findings,
            "matched_findings": self.matched_findings,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


def finding_text(item: dict[str, Any]) -> Finding:
    """A finding of reviewflow's JSON report as the judge reads it."""
    path = str(item.get("path") or "")
    start, end = item.get("start_line"), item.get("end_line")
    where = f"{path}:{start}" + (f"-{end}" if end and end != start else "") if start else path
    parts = [item.get("title"), item.get("problem"), item.get("suggestion")]
    body = "\n".join(str(p) for p in parts if p)
    return Finding(path, start, end, f"{where}\n{body}" if where else body)


def line_window_hits(golden: tuple[Golden, ...], findings: list[Finding]) -> list[Verdict]:
    """A verdict for each golden comment with a file and line that a finding on that file
    comes within WINDOW lines of (the first such finding; no model asked)."""
    hits = []
    for g, gold in enumerate(golden):
        if gold.file is None or gold.line is None:
            continue
        for f, finding in enumerate(findings):
            if finding.path != gold.file or finding.start_line is None:
                continue
            end = finding.end_line or finding.start_line
            if finding.start_line - WINDOW <= gold.line <= end + WINDOW:
                reason = f"{finding.path}:{finding.start_line}-{end} within {WINDOW} lines"
                hits.append(Verdict(g, f, True, 1.0, reason, "line-window"))
                break
    return hits


def pairs_for_judge(
    golden_count: int, finding_count: int, hits: list[Verdict]
) -> list[tuple[int, int]]:
    """Every (golden, finding) pair the judge must see: golden comments not caught already."""
    caught = {v.golden for v in hits if v.match}
    return [(g, f) for g in range(golden_count) if g not in caught for f in range(finding_count)]


def count(golden_count: int, finding_count: int, verdicts: list[Verdict]) -> Counts:
    """The counts a case's verdicts give (errors count as no match)."""
    matched = [v for v in verdicts if v.match and v.error is None]
    return Counts(
        golden=golden_count,
        caught=len({v.golden for v in matched}),
        findings=finding_count,
        matched_findings=len({v.finding for v in matched}),
    )
