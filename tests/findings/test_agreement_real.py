"""Agreement across passes on real reviewers' findings (tests/data/agreement/real_pairs.json):
pairs of findings that two AI reviewers posted on the same pull request, hand-labelled
same/different, judged by the real `clusters`. The measured accuracy must equal the figure
recorded in the data file, half by half and convention by convention, and the pairs it gets
wrong must be the recorded ones: a rule change that moves either is seen (then the data file's
`measured` block and bench/RESULTS.md are updated with it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from reviewflow.findings.agreement import Member, clusters
from reviewflow.findings.finalize import _deduplicate, fingerprint
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.models import Category, Severity

REAL = Path(__file__).parents[1] / "data" / "agreement" / "real_pairs.json"
CONVENTIONS = ("as_written", "span_code")


def real_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REAL.read_text())
    return data


def as_finding(pr: str, item: dict[str, Any], convention: str) -> Finding:
    """A reviewer's comment in reviewflow's Finding shape. `as_written` quotes title and lines
    as existing code (as tests/findings/test_agreement.py does: no shared fingerprints);
    `span_code` quotes the anchored span, so equal spans share a fingerprint."""
    start, end = item["lines"]
    if convention == "as_written":
        code = f"{item['title']} {(start, end)}"
    else:
        code = f"{item['path']} lines {start}-{end}"
    category = Category(item["category"])
    digest = fingerprint(item["path"], code, category)
    return Finding(
        id=f"{pr}:{item['reviewer']}:{item['id']}",
        fingerprint=digest,
        severity=Severity.HIGH,
        category=category,
        path=item["path"],
        start_line=start,
        end_line=end,
        title=item["title"],
        problem=item["excerpt"],
        confidence=0.9,
        existing_code=code,
        placed_by=PlacedBy.EXACT,
    )


def one_pass(pr: dict[str, Any], reviewer: str, convention: str) -> list[Finding]:
    """The reviewer's findings on the pull request, deduplicated by fingerprint as finalize
    does within a pass (a no-op under `as_written`)."""
    mine = [f for f in pr["findings"] if f["reviewer"] == reviewer]
    found = [as_finding(pr["id"], f, convention) for f in mine]
    kept, _ = _deduplicate(found)
    return kept


def joined(pr: dict[str, Any], pair: dict[str, Any], convention: str) -> bool:
    """Whether the pair's two findings end in one cluster when reviewer a is pass 1 and
    reviewer b pass 2 (a finding the pass dropped as a duplicate is judged by the one kept)."""
    by_id = {f["id"]: f for f in pr["findings"]}
    a, b = by_id[pair["a"]], by_id[pair["b"]]
    first = one_pass(pr, a["reviewer"], convention)
    second = one_pass(pr, b["reviewer"], convention)
    members = [Member(1, f) for f in first] + [Member(2, f) for f in second]
    cluster_of = {
        (m.review_pass, m.finding.fingerprint): n
        for n, cluster in enumerate(clusters(members))
        for m in cluster
    }
    key_a = (1, as_finding(pr["id"], a, convention).fingerprint)
    key_b = (2, as_finding(pr["id"], b, convention).fingerprint)
    return cluster_of[key_a] == cluster_of[key_b]


def measure(data: dict[str, Any], half: str, convention: str) -> dict[str, Any]:
    prs = {pr["id"]: pr for pr in data["prs"]}
    judged = [
        (pair, joined(prs[pair["pr"]], pair, convention))
        for pair in data["pairs"]
        if prs[pair["pr"]]["half"] == half
    ]
    return {
        "pairs": len(judged),
        "same": sum(pair["same"] for pair, _ in judged),
        "right": sum(pair["same"] == got for pair, got in judged),
        "false_joins": sum(got and not pair["same"] for pair, got in judged),
        "false_splits": sum(pair["same"] and not got for pair, got in judged),
        "wrong": sorted(f"{p['pr']}:{p['a']}-{p['b']}" for p, got in judged if p["same"] != got),
    }


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("half", ["tune", "test"])
def test_accuracy_on_real_pairs_is_the_recorded_figure(half: str, convention: str) -> None:
    data = real_data()
    assert measure(data, half, convention) == data["measured"][convention][half]


def _lines_apart(a: dict[str, Any], b: dict[str, Any]) -> int:
    (a0, a1), (b0, b1) = a["lines"], b["lines"]
    return max(0, b0 - a1, a0 - b1)


def test_the_real_set_is_what_its_readme_says() -> None:
    """At least 40 pairs from at least 8 pull requests; each pair two reviewers on one file,
    with a reason; a different-labelled pair within 15 lines; halves fixed per pull request."""
    data = real_data()
    prs = {pr["id"]: pr for pr in data["prs"]}
    pairs: Sequence[dict[str, Any]] = data["pairs"]
    assert len(pairs) >= 40 and len({p["pr"] for p in pairs}) >= 8
    assert {pr["half"] for pr in prs.values()} == {"tune", "test"}
    for pair in pairs:
        by_id = {f["id"]: f for f in prs[pair["pr"]]["findings"]}
        a, b = by_id[pair["a"]], by_id[pair["b"]]
        assert a["reviewer"] != b["reviewer"] and a["path"] == b["path"] and pair["why"]
        assert pair["same"] or _lines_apart(a, b) <= 15
    for pr in prs.values():
        for item in pr["findings"]:
            assert len(item["excerpt"]) <= 300 and item["lines_from"]
            assert item["lines"][0] <= item["lines"][1]
            Category(item["category"])  # one of reviewflow's six
