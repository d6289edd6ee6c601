"""Agreement across independent passes (`review.passes`): each pass's findings clustered with
the other passes', a cluster kept when `review.min_agreement` passes found it.

Two findings of different passes are the same finding when they are on the same file, in the
same category, on lines at most `NEARBY_LINES` apart, and one of: the same fingerprint; titles
that agree after normalization (lower case, punctuation and underscores split words, one-letter
and filler words out, each word cut to its first five letters after a plural or verb ending;
the shared words at least half of the shorter title's); or, when titles do not decide, title and
problem together agree as titles must. On overlapping lines one more suffices: each is the
other's only candidate (the one finding of its pass, of that category, on overlapping lines,
both ways). Real reviewers anchor one defect a line or a few apart (bench/RESULTS.md, "Clustering
on real reviewers' pairs"), so words that agree join findings that nearly touch; only
overlapping lines make the only-candidate rule safe. A cluster holds at most one finding per
pass; pairs are joined best first (same fingerprint, then title likeness, then text likeness,
then line overlap, nearer first). The kept
finding is the best-placed member (placement: anchor first; then the tighter span; then the
higher confidence; then the earlier pass); the others are dropped as duplicates of it, and
their fingerprints kept on it (`cluster_fingerprints`: a dismissal of any member silences
whichever member a later review keeps). A cluster below the agreement is dropped as
`no_agreement`, or kept for the verification to decide (`review.below_agreement: verify` with
`review.verify`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reviewflow.config import ReviewSettings
from reviewflow.config.schema import BelowAgreement
from reviewflow.findings.finalize import Finalized, finding_order
from reviewflow.findings.models import Dropped, DropReason, Finding, PlacedBy

TITLE_AGREEMENT = 0.5  # shared normalized words over the shorter title's (or text's)
NEARBY_LINES = 3  # how far apart (`lines_apart`) words can still join two findings
STEM_LETTERS = 5
PLACEMENT_RANK = {placed: rank for rank, placed in enumerate(PlacedBy)}
_FILLER = frozenset(
    "a an the of in on at to for from by with and or is are be may can could might "
    "this that it its when if not no into via about".split()
)
_ENDINGS = ("ing", "ed", "es", "s")


@dataclass(frozen=True)
class Member:
    """One pass's finding (`review_pass` counts from 1)."""

    review_pass: int
    finding: Finding


def normalized_title(title: str) -> frozenset[str]:
    """The title's words, compared: lower case, no punctuation, one-letter words or filler,
    endings cut, the first five letters."""
    words = re.findall(r"[a-z0-9]+", title.lower())  # identifiers split at underscores
    return frozenset(_stem(word) for word in words if word not in _FILLER and len(word) > 1)


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if len(word) > len(ending) + 3 and word.endswith(ending):
            word = word[: -len(ending)]
            break
    return word[:STEM_LETTERS]


def title_likeness(first: str, second: str) -> float:
    """Shared normalized words over the shorter title's (0 with an empty one)."""
    a, b = normalized_title(first), normalized_title(second)
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def text_likeness(a: Finding, b: Finding) -> float:
    """`title_likeness` of title and problem together."""
    return title_likeness(f"{a.title} {a.problem}", f"{b.title} {b.problem}")


def lines_apart(a: Finding, b: Finding) -> int:
    """How far one span starts after the other ends, in lines (0 when they overlap; 1 for
    neighbouring lines)."""
    return max(0, b.start_line - a.end_line, a.start_line - b.end_line)


def overlapping(a: Finding, b: Finding) -> bool:
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def comparable(a: Finding, b: Finding) -> bool:
    """Same file, same category, lines at most `NEARBY_LINES` apart."""
    return a.path == b.path and a.category == b.category and lines_apart(a, b) <= NEARBY_LINES


def _overlap(a: Finding, b: Finding) -> float:
    shared = min(a.end_line, b.end_line) - max(a.start_line, b.start_line) + 1
    union = max(a.end_line, b.end_line) - min(a.start_line, b.start_line) + 1
    return shared / union


def clusters(members: Sequence[Member]) -> list[list[Member]]:
    """The members grouped into clusters (each at most one finding per pass), in the order of
    their first member."""
    rivals = [
        [
            j
            for j, other in enumerate(members)
            if other.review_pass != m.review_pass and comparable(m.finding, other.finding)
        ]
        for m in members
    ]
    pairs: list[tuple[tuple[int, float, float, float], int, int]] = []
    for i, found in enumerate(rivals):
        for j in found:
            if j <= i:
                continue
            a, b = members[i].finding, members[j].finding
            same = a.fingerprint == b.fingerprint
            title, text = title_likeness(a.title, b.title), text_likeness(a, b)
            if (
                same
                or title >= TITLE_AGREEMENT
                or text >= TITLE_AGREEMENT
                or (overlapping(a, b) and _only_rivals(members, rivals, i, j))
            ):
                pairs.append(((int(same), title, text, _overlap(a, b)), i, j))
    group = list(range(len(members)))
    passes = [{m.review_pass} for m in members]

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for _, i, j in sorted(pairs, key=lambda pair: pair[0], reverse=True):
        ri, rj = root(i), root(j)
        if ri == rj or passes[ri] & passes[rj]:
            continue  # one finding per pass in a cluster
        group[rj] = ri
        passes[ri] |= passes[rj]
    joined: dict[int, list[Member]] = {}
    for i, member in enumerate(members):
        joined.setdefault(root(i), []).append(member)
    return list(joined.values())


def _only_rivals(members: Sequence[Member], rivals: list[list[int]], i: int, j: int) -> bool:
    """Whether `j` is the one finding of its pass on lines overlapping `i`'s, and `i` of its
    overlapping `j`'s."""

    def of_pass(of: int, number: int) -> list[int]:
        return [
            k
            for k in rivals[of]
            if members[k].review_pass == number
            and overlapping(members[of].finding, members[k].finding)
        ]

    return of_pass(i, members[j].review_pass) == [j] and of_pass(j, members[i].review_pass) == [i]


def best_placed(cluster: Sequence[Member]) -> Member:
    """The cluster's kept member: the most certain placement, tightest span, most confident,
    earliest pass."""
    return min(
        cluster,
        key=lambda m: (
            PLACEMENT_RANK[m.finding.placed_by],
            m.finding.end_line - m.finding.start_line,
            -m.finding.confidence,
            m.review_pass,
        ),
    )


def agree(per_pass: Sequence[Finalized], settings: ReviewSettings) -> Finalized:
    """The passes' findings put together: one finding per cluster found by at least
    `settings.agreement` passes (its `agreement` "k/N"), the others dropped (or kept for the
    verification, see the module docstring); every pass's own drops are kept, the later
    passes' named by their pass."""
    total = len(per_pass)
    members = [
        Member(number, finding)
        for number, finalized in enumerate(per_pass, 1)
        for finding in finalized.findings
    ]
    verify_below = settings.verify and settings.below_agreement is BelowAgreement.VERIFY
    findings: list[Finding] = []
    drops = [_of_pass(d, number) for number, done in enumerate(per_pass, 1) for d in done.dropped]
    for cluster in clusters(members):
        kept = best_placed(cluster)
        agreement = f"{len(cluster)}/{total}"
        others = sorted({m.finding.fingerprint for m in cluster} - {kept.finding.fingerprint})
        update = {"agreement": agreement, "cluster_fingerprints": tuple(others)}
        finding = kept.finding.model_copy(update=update)
        if len(cluster) >= settings.agreement or verify_below:
            findings.append(finding)
            drops += [_duplicate(m, finding) for m in cluster if m is not kept]
        else:
            drops.append(_no_agreement(finding, agreement, settings.agreement))
    return Finalized(
        findings=tuple(sorted(findings, key=finding_order)),
        dropped=tuple(drops),
        warnings=tuple(w for done in per_pass for w in done.warnings),
        complete=all(done.complete for done in per_pass),
    )


def _of_pass(drop: Dropped, number: int) -> Dropped:
    if number == 1:
        return drop
    detail = f"pass {number}" + (f": {drop.detail}" if drop.detail else "")
    return drop.model_copy(update={"detail": detail})


def _duplicate(member: Member, kept: Finding) -> Dropped:
    f = member.finding
    return Dropped(
        path=f.path,
        title=f.title,
        reason=DropReason.DUPLICATE,
        duplicate_of=kept.id,
        detail=f"pass {member.review_pass}, lines {f.start_line}-{f.end_line}",
    )


def _no_agreement(finding: Finding, agreement: str, needed: int) -> Dropped:
    return Dropped(
        path=finding.path,
        title=finding.title,
        reason=DropReason.NO_AGREEMENT,
        detail=(
            f"found by {agreement} passes < review.min_agreement {needed}, "
            f"lines {finding.start_line}-{finding.end_line}"
        ),
    )
