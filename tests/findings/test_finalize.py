"""Revalidation, threshold, fingerprint, deduplication, aggregation and the gate (steps 7-8)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from reviewflow.config import ReviewSettings
from reviewflow.findings import (
    Finalized,
    finalize,
    fingerprint,
    gate,
    group_candidates,
    relocate_file,
)
from reviewflow.findings.models import (
    DropReason,
    FileFindings,
    Finding,
    PlacedBy,
    PlacedCandidate,
)
from reviewflow.git.models import FileDiff
from reviewflow.models import Candidate, Category, Severity
from tests.findings.conftest import BILLING_BASE, BILLING_NEW, commit_change, no_model
from tests.gitutil import GitRepo

Make = Callable[..., Candidate]
SETTINGS = ReviewSettings(confidence_threshold=0.75)


def _final(change: dict[str, FileDiff], candidates: list[Candidate]) -> Finalized:
    groups, outside = group_candidates(candidates, change)
    files = [relocate_file(change[path], group, no_model) for path, group in groups.items()]
    return finalize(files, SETTINGS, outside)


def test_threshold_duplicates_and_order(change: dict[str, FileDiff], candidate: Make) -> None:
    sql = "    query = \"SELECT * FROM customers WHERE name = '%s'\" % name"
    candidates = [
        candidate(existing_code="    return total_price / len(items)", severity="medium"),
        candidate(existing_code=sql, category="vulnerability", severity="critical", title="SQLi"),
        candidate(start_line=16, severity="High", confidence=0.8, title="Empty list"),
        candidate(start_line=16, severity="low", confidence=0.99, title="same, as a line range"),
        candidate(existing_code="    handle = open(path)", confidence=0.5, title="low"),
        candidate(file="app/worker.py", start_line=10, category="race", title="Lost update"),
        candidate(file="app/ghost.py", start_line=1, title="ghost"),
    ]
    final = _final(change, candidates)
    assert final.complete and not final.warnings
    findings = final.findings
    assert [(f.severity, f.category, f.path, f.start_line, f.title) for f in findings] == [
        (Severity.CRITICAL, Category.SECURITY, "app/billing.py", 26, "SQLi"),
        (Severity.HIGH, Category.CORRECTNESS, "app/billing.py", 16, "Empty list"),
        (Severity.HIGH, Category.CONCURRENCY, "app/worker.py", 10, "Lost update"),
    ]
    empty_list = findings[1]
    assert empty_list.id == "F" + empty_list.fingerprint[:12]
    assert empty_list.existing_code == "    return total_price / len(items)"
    dropped = {(d.title, d.reason, d.duplicate_of) for d in final.dropped}
    assert dropped == {
        ("ghost", DropReason.OUTSIDE_CHANGE, None),
        ("low", DropReason.BELOW_THRESHOLD, None),
        ("Division by zero", DropReason.DUPLICATE, empty_list.id),
        ("same, as a line range", DropReason.DUPLICATE, empty_list.id),
    }


def test_same_input_twice_gives_identical_findings(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    candidates = [
        candidate(existing_code="    return items[len(items)]", start_line=2),
        candidate(file="app/worker.py", existing_code="current = self.value"),
    ]
    first, second = _final(change, candidates), _final(change, candidates)
    assert first == second
    assert len(first.findings) == 2


def test_fingerprint_is_stable_when_lines_shift(tmp_path: Path, candidate: Make) -> None:
    def shift(text: str) -> str:
        return text.replace('"""Billing helpers."""\n', '"""Billing helpers."""\n\n\n\n\n')

    path = "app/billing.py"
    plain = commit_change(GitRepo.init(tmp_path / "a"), {path: BILLING_BASE}, {path: BILLING_NEW})
    moved = commit_change(
        GitRepo.init(tmp_path / "b"), {path: shift(BILLING_BASE)}, {path: shift(BILLING_NEW)}
    )
    one = candidate(existing_code="return total_price / len(items)", title="wording one")
    two = candidate(existing_code="    return  total_price / len(items)", title="other words")
    (a,) = _final(plain, [one]).findings
    (b,) = _final(moved, [two]).findings
    assert (a.start_line, b.start_line) == (16, 20)
    assert a.fingerprint == b.fingerprint and a.id == b.id


def test_repeated_code_in_two_places_is_two_findings(
    change: dict[str, FileDiff], candidate: Make
) -> None:
    guard = "    if not items:\n        return None"
    candidates = [
        candidate(existing_code=guard, start_line=30, title="first_item"),
        candidate(existing_code=guard, start_line=37, title="last_item"),
        candidate(existing_code=guard, start_line=36, title="last_item again"),
    ]
    final = _final(change, candidates)
    assert [(f.start_line, f.title) for f in final.findings] == [
        (31, "first_item"),
        (37, "last_item"),
    ]
    assert final.findings[0].fingerprint == fingerprint(
        "app/billing.py", guard, Category.CORRECTNESS
    )
    assert [(d.title, d.duplicate_of) for d in final.dropped] == [
        ("last_item again", final.findings[1].id)
    ]


def test_fingerprint_depends_on_path_code_and_category() -> None:
    base = fingerprint("a.py", "x = 1\n", Category.CORRECTNESS)
    assert base == fingerprint("a.py", "  x   =  1 \n\n", Category.CORRECTNESS)
    assert base != fingerprint("b.py", "x = 1", Category.CORRECTNESS)
    assert base != fingerprint("a.py", "x = 2", Category.CORRECTNESS)
    assert base != fingerprint("a.py", "x = 1", Category.SECURITY)
    assert base != fingerprint("a.py", "x = 1", Category.CORRECTNESS, occurrence=1)


def test_revalidation_refuses_unchanged_lines_and_bad_fields(candidate: Make) -> None:
    def placed(cid: str, line: int, **fields: object) -> PlacedCandidate:
        return PlacedCandidate(
            id=cid,
            candidate=candidate(**fields),
            start_line=line,
            end_line=line,
            existing_code="x = 1",
            placed_by="exact",
        )

    file = FileFindings(
        path="app/billing.py",
        changed_lines=(5, 9),
        placed=(
            placed("c-0", 6),
            placed("c-1", 9, category="naming"),
            placed("c-2", 9, confidence=1.5),
            placed("c-3", 9, confidence=0.75),
        ),
        complete=False,
    )
    final = finalize([file], SETTINGS)
    assert [(d.reason) for d in final.dropped] == [
        DropReason.UNCHANGED_LINE,
        DropReason.UNKNOWN_CATEGORY,
        DropReason.INVALID_CONFIDENCE,
    ]
    assert [f.confidence for f in final.findings] == [0.75]  # the threshold itself passes
    assert not final.complete


def test_gate() -> None:
    def finding(severity: Severity) -> Finding:
        return Finding(
            id="F1",
            fingerprint="1",
            severity=severity,
            category=Category.CORRECTNESS,
            path="a.py",
            start_line=1,
            end_line=1,
            title="t",
            problem="p",
            confidence=0.9,
            existing_code="x",
            placed_by=PlacedBy.EXACT,
        )

    fail_on = [Severity.CRITICAL, Severity.HIGH]
    assert gate([], fail_on, complete=True) == 0
    assert gate([finding(Severity.MEDIUM)], fail_on, complete=True) == 0
    assert gate([finding(Severity.MEDIUM), finding(Severity.HIGH)], fail_on, complete=True) == 1
    assert gate([], fail_on, complete=False) == 2
    assert gate([finding(Severity.CRITICAL)], fail_on, complete=False) == 2
    assert gate([finding(Severity.LOW)], [Severity.LOW], complete=True) == 1
