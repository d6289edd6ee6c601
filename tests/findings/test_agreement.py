"""Agreement across passes (`reviewflow.findings.agreement`): the clustering on hand-labelled
findings (tests/data/agreement/pairs.json) and its hard cases, what is kept and dropped, and
the later passes' jobs (`reviewflow.review.passes`)."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from reviewflow.config import ReviewSettings
from reviewflow.findings.agreement import (
    NEARBY_LINES,
    Member,
    agree,
    best_placed,
    clusters,
    title_likeness,
)
from reviewflow.findings.finalize import Finalized, fingerprint
from reviewflow.findings.models import Dropped, DropReason, FileFindings, Finding, PlacedBy
from reviewflow.findings.stages import summarize
from reviewflow.models import Category, Severity
from reviewflow.review.jobs import Chunk, FileJob
from reviewflow.review.passes import pass_job, pass_jobs, split_hunks
from tasks.caching import canonical

PAIRS = Path(__file__).parents[1] / "data" / "agreement" / "pairs.json"


def finding(
    title: str,
    lines: tuple[int, int],
    path: str = "billing.py",
    category: str = "correctness",
    problem: str = "",
    placed_by: PlacedBy = PlacedBy.EXACT,
    confidence: float = 0.9,
    code: str | None = None,
) -> Finding:
    code = code if code is not None else f"{title} {lines}"
    digest = fingerprint(path, code, Category(category))
    return Finding(
        id=f"F{digest[:12]}",
        fingerprint=digest,
        severity=Severity.HIGH,
        category=Category(category),
        path=path,
        start_line=lines[0],
        end_line=lines[1],
        title=title,
        problem=problem or title,
        confidence=confidence,
        existing_code=code,
        placed_by=placed_by,
    )


def labelled_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(PAIRS.read_text())["cases"]
    return cases


def _members(case: dict[str, Any]) -> dict[str, Member]:
    members = {}
    for number, found in enumerate(case["passes"], 1):
        for item in found:
            made = finding(
                item["title"],
                tuple(item["lines"]),
                path=item["path"],
                category=item["category"],
                problem=item["problem"],
            )
            members[f"{number}:{item['id']}"] = Member(number, made)
    return members


def judged(case: dict[str, Any]) -> list[tuple[bool, bool]]:
    """Every pair of a pass-1 and a pass-2 finding of `case`: (labelled same, clustered same)."""
    members = _members(case)
    names = list(members)
    joined = clusters(list(members.values()))
    where = {names[list(members.values()).index(m)]: n for n, c in enumerate(joined) for m in c}
    same = {(f"1:{a}", f"2:{b}") for a, b in case["same"]}
    firsts = [n for n in names if n.startswith("1:")]
    seconds = [n for n in names if n.startswith("2:")]
    return [((a, b) in same, where[a] == where[b]) for a, b in product(firsts, seconds)]


@pytest.mark.parametrize("case", labelled_cases(), ids=lambda case: case["name"])
def test_hand_labelled_pairs_are_clustered_as_labelled(case: dict[str, Any]) -> None:
    """Every pair as labelled, except in a case whose `accepted_error` says why the rules get
    it wrong on purpose: there every pair is judged the other way, as recorded."""
    wrong = [label != got for label, got in judged(case)]
    assert all(wrong) if case.get("accepted_error") else not any(wrong), judged(case)


def test_the_labelled_set_has_hard_pairs() -> None:
    """Enough pairs that only the titles or the text tell apart (same file, category, lines)."""
    pairs = [pair for case in labelled_cases() for pair in judged(case)]
    assert len(pairs) >= 30 and sum(label for label, _ in pairs) >= 12


def test_two_findings_on_one_line_stay_two_clusters() -> None:
    tls = finding("TLS certificate verification disabled", (12, 12), category="security")
    key = finding("Hard-coded credentials in request", (12, 12), category="security")
    key2 = finding("Hard-coded password passed to requests.get", (12, 12), category="security")
    tls2 = finding("verify=False disables certificate verification", (12, 12), category="security")
    joined = clusters([Member(1, tls), Member(1, key), Member(2, key2), Member(2, tls2)])
    assert sorted(sorted(m.finding.title for m in c) for c in joined) == [
        sorted([key.title, key2.title]),
        sorted([tls.title, tls2.title]),
    ]


def test_a_span_over_another_finding_joins_it_and_a_pass_counts_once() -> None:
    wide = finding("Race condition on the shared counter", (10, 14), category="concurrency")
    inner = finding("Race condition: shared counter", (12, 12), category="concurrency")
    again = finding("Race on shared counter increment", (11, 13), category="concurrency")
    joined = clusters([Member(1, wide), Member(2, inner), Member(2, again)])
    assert sorted(len(c) for c in joined) == [1, 2]  # pass 2 cannot agree with pass 1 twice


def test_neither_another_category_nor_distant_lines_agree() -> None:
    a = finding("Off-by-one in last_item", (38, 38))
    other_kind = finding("Off-by-one in last_item", (38, 38), category="tests")
    further = finding("Off-by-one in last_item", (38 + NEARBY_LINES + 1, 44))
    assert len(clusters([Member(1, a), Member(2, other_kind), Member(3, further)])) == 3


def test_nearby_lines_agree_by_their_words_only() -> None:
    """Findings a few lines apart join when titles (or text) agree; the only-candidate rule
    needs overlapping lines."""
    a = finding("Off-by-one in last_item", (38, 38))
    near = finding("last_item is off by one", (38 + NEARBY_LINES, 38 + NEARBY_LINES))
    unlike = finding("Mutable default argument", (40, 40), problem="Shared between calls.")
    assert len(clusters([Member(1, a), Member(2, near)])) == 1
    assert len(clusters([Member(1, a), Member(2, unlike)])) == 2


def test_titles_are_compared_after_normalization() -> None:
    assert title_likeness("Expired tokens are accepted", "Token expiry never checked") >= 0.5
    assert title_likeness("File handle never closed!", "file handles: never closed") == 1.0
    assert title_likeness("Quadratic lookup", "Missing None check") == 0.0
    assert title_likeness("", "anything") == 0.0


def test_the_kept_finding_is_the_best_placed() -> None:
    by_lines = Member(1, finding("Leak", (20, 22), placed_by=PlacedBy.LINES, confidence=0.99))
    exact_wide = Member(2, finding("Leak", (20, 23), placed_by=PlacedBy.EXACT))
    exact_tight = Member(3, finding("Leak", (21, 21), placed_by=PlacedBy.EXACT, confidence=0.8))
    assert best_placed([by_lines, exact_wide, exact_tight]) is exact_tight
    anchored = Member(3, finding("Leak", (20, 25), placed_by=PlacedBy.ANCHOR))
    assert best_placed([by_lines, exact_tight, anchored]) is anchored


def _passes(*found: list[Finding], dropped: tuple[Dropped, ...] = ()) -> list[Finalized]:
    return [Finalized(findings=tuple(f), dropped=dropped) for f in found]


def test_min_agreement_keeps_agreed_clusters_and_drops_the_rest() -> None:
    real = [finding("Division by zero on empty list", (16, 17))]
    noise = finding("Variable name is unclear", (30, 30), category="correctness")
    other = finding("Unused import Decimal", (3, 3))
    leak = Dropped(path="billing.py", title="x", reason=DropReason.UNPLACED, detail="lines 9-9")
    per_pass = _passes([*real, noise], real, [*real, other], dropped=(leak,))
    done = agree(per_pass, ReviewSettings(passes=3, min_agreement=2))

    [kept] = done.findings
    assert (kept.title, kept.agreement) == ("Division by zero on empty list", "3/3")
    reasons = [(d.reason, d.title) for d in done.dropped]
    assert (DropReason.NO_AGREEMENT, noise.title) in reasons
    assert (DropReason.NO_AGREEMENT, other.title) in reasons
    assert reasons.count((DropReason.DUPLICATE, kept.title)) == 2  # the other passes' copies
    details = [d.detail for d in done.dropped if d.reason is DropReason.UNPLACED]
    assert details == ["lines 9-9", "pass 2: lines 9-9", "pass 3: lines 9-9"]
    no_agreement = next(d for d in done.dropped if d.reason is DropReason.NO_AGREEMENT)
    assert no_agreement.detail is not None and "1/3" in no_agreement.detail

    everything = agree(per_pass, ReviewSettings(passes=3, min_agreement=1))
    assert sorted(f.agreement or "" for f in everything.findings) == ["1/3", "1/3", "3/3"]
    unanimous = agree(per_pass, ReviewSettings(passes=3, min_agreement=3))
    assert [f.agreement for f in unanimous.findings] == ["3/3"]


def test_the_kept_finding_carries_its_clusters_other_fingerprints() -> None:
    """What a dismissal of any member matches: the others' fingerprints, sorted, its own and
    repeats left out; none for a finding every pass placed alike, or found by one pass."""
    title = "Division by zero on empty list"
    tight = finding(title, (16, 16), confidence=0.7)
    wide = finding(title, (15, 17))
    other = finding(title, (16, 17))
    done = agree(_passes([wide], [tight], [other], [tight]), ReviewSettings(passes=4))
    [kept] = done.findings
    assert (kept.fingerprint, kept.agreement) == (tight.fingerprint, "4/4")
    assert kept.cluster_fingerprints == tuple(sorted([wide.fingerprint, other.fingerprint]))
    assert kept.fingerprints == (tight.fingerprint, *kept.cluster_fingerprints)
    alike = agree(_passes([tight], [tight]), ReviewSettings(passes=2)).findings
    alone = agree(_passes([tight], []), ReviewSettings(passes=2, min_agreement=1)).findings
    assert [f.cluster_fingerprints for f in (*alike, *alone)] == [(), ()]
    assert "cluster_fingerprints" not in alike[0].cache_identity()


def test_below_agreement_verify_keeps_them_for_the_verification_only_with_verify() -> None:
    per_pass = _passes([finding("Leak", (5, 5))], [], [])
    kept = ReviewSettings(passes=3, below_agreement="verify", verify=True)
    assert [f.agreement for f in agree(per_pass, kept).findings] == ["1/3"]
    dropped = ReviewSettings(passes=3, below_agreement="verify")  # no verification to decide
    assert agree(per_pass, dropped).findings == ()


def test_settings_check_passes_agreement_and_pass_models() -> None:
    assert ReviewSettings().agreement == 1
    assert [ReviewSettings(passes=n).agreement for n in (2, 3, 4, 5)] == [2, 2, 3, 3]
    with pytest.raises(ValidationError, match="no finding is found by more passes than"):
        ReviewSettings(passes=2, min_agreement=3)
    with pytest.raises(ValidationError, match="2 models for 1 passes"):
        ReviewSettings(pass_models=[{"name": "a"}, {"name": "b"}])
    with pytest.raises(ValidationError, match="take no api_key"):
        ReviewSettings(passes=2, pass_models=[{"name": "a", "api_key": "sk-secret"}])
    with pytest.raises(ValidationError):
        ReviewSettings(passes=6)


def _job(text: str) -> FileJob:
    chunk = Chunk(index=0, count=1, text=text, changed_lines=3)
    return FileJob(
        path="a.py", status="modified", changed_lines=3, chunks=(chunk,), rule="r",
        rule_label="system:x", language="en",
    )  # fmt: skip


def test_later_passes_reorder_hunks_and_are_keyed_apart() -> None:
    text = "@@ -1,1 +1,1 @@\nL1#aaa +a\n@@ -5,1 +5,1 @@\nL5#bbb +b\n@@ -9,1 +9,1 @@\nL9#ccc +c"
    job = _job(text)
    first, second, third = pass_jobs([job], 3)
    assert first == [job]
    heads = [[h.split("\n")[1] for h in split_hunks(j.chunks[0].text)] for j in (*second, *third)]
    assert heads == [
        ["L1#aaa +a", "L9#ccc +c", "L5#bbb +b"],
        ["L9#ccc +c", "L1#aaa +a", "L5#bbb +b"],
    ]
    assert sorted(split_hunks(second[0].chunks[0].text)) == sorted(split_hunks(text))
    # The first pass is keyed as a review without passes; each later pass apart.
    assert canonical(job) == job.model_dump(mode="json", exclude={"review_pass"})
    keys = {json.dumps(canonical(j)) for j in (job, pass_job(job, 2), pass_job(job, 3))}
    assert len(keys) == 3
    one_hunk = _job("@@ -1,1 +1,1 @@\nL1#aaa +a")
    assert pass_job(one_hunk, 2).chunks == one_hunk.chunks  # the same text, its own key
    assert canonical(pass_job(one_hunk, 2)) != canonical(one_hunk)


def test_a_file_is_finished_when_every_pass_of_it_is() -> None:
    files = (
        FileFindings(path="a.py", complete=True),
        FileFindings(path="b.py", complete=True),
        FileFindings(path="a.py", complete=True),
        FileFindings(path="b.py", complete=False),  # cancelled in its second pass
    )
    two = summarize([], [], files).of_passes([1, 1, 2, 2], 2)
    assert two.finished_paths() == {"a.py"}
    assert [[f.path for f in done] for done in two.by_pass(2)] == [["a.py", "b.py"]] * 2
    one = summarize([], [], files[:2])
    assert one.finished_paths() == {"a.py", "b.py"} and one.by_pass(1) == [list(files[:2])]
