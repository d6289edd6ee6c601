"""Deterministic placement: where in a file's changed hunks a candidate's code really is.

Only the new side of the diff counts (context and added lines), and a placement must overlap
at least one added line: a finding on context lines alone is on an unchanged line. The
candidate's anchor (line tags, `reviewflow.anchors`) comes first, checked against its quoted
code; then the quoted code; then its line numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from reviewflow.anchors import Anchor, AnchorRange, line_hash, parse_anchor, strip_tag
from reviewflow.findings.models import DropReason, PlacedBy
from reviewflow.git.models import DiffLine, FileDiff
from reviewflow.models import Candidate


@dataclass(frozen=True, slots=True)
class NewLine:
    """One new-side line of a hunk: its number, text, and whether the change added it."""

    no: int
    text: str
    added: bool


Side = tuple[NewLine, ...]
"""The new-side lines of one hunk (context and added), in order."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Real new-side lines of a changed hunk, the code on them, and how they were found."""

    start_line: int
    end_line: int
    existing_code: str
    placed_by: PlacedBy


Outcome = Placement | DropReason
"""A placement, or why there is none (UNCHANGED_LINE: found, but only on unchanged lines)."""


def new_sides(file: FileDiff) -> tuple[Side, ...]:
    """The new side of each hunk of `file`."""
    return tuple(_side(hunk.lines) for hunk in file.hunks)


def _side(lines: Sequence[DiffLine]) -> Side:
    return tuple(
        NewLine(line.new_no, line.text.rstrip("\r"), line.kind == "add")
        for line in lines
        if line.new_no is not None
    )


def _exact(text: str) -> str:
    return text.rstrip()


def _squashed(text: str) -> str:
    return " ".join(text.split())


def _code_lines(code: str) -> list[str]:
    lines = [line.rstrip() for line in code.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _windows(
    side: Side, target: list[str], norm: Callable[[str], str], skip_blank: bool
) -> Iterator[Side]:
    """Every run of `side` whose (normalized) lines equal `target`, blank lines kept inside."""
    rows = [line for line in side if not (skip_blank and not line.text.strip())]
    texts = [norm(line.text) for line in rows]
    size = len(target)
    for i in range(len(texts) - size + 1):
        if texts[i] == target[0] and texts[i : i + size] == target:
            first, last = rows[i], rows[i + size - 1]
            yield tuple(ln for ln in side if first.no <= ln.no <= last.no)


def _nearest(windows: Sequence[Side], hint: int | None) -> Side:
    if hint is None:
        return windows[0]
    return min(windows, key=lambda w: abs(w[0].no - hint))


def _placement(window: Side, placed_by: PlacedBy) -> Placement:
    return Placement(
        start_line=window[0].no,
        end_line=window[-1].no,
        existing_code="\n".join(line.text for line in window),
        placed_by=placed_by,
    )


def locate_code(
    sides: Sequence[Side], code: str, hint: int | None, placed_by: PlacedBy | None = None
) -> Outcome:
    """Find `code` as contiguous new-side lines overlapping an added line: exactly (trailing
    whitespace ignored), then with whitespace and blank lines ignored, then without the `+`
    markers of a quoted diff, then (one line of code) as part of one line; nearest to `hint`."""
    lines = _code_lines(code)
    if not lines:
        return DropReason.UNPLACED
    seen_unchanged = False
    for name, target, norm, skip_blank in _passes(lines):
        hits: list[Side] = []
        for side in sides:
            for window in _windows(side, target, norm, skip_blank):
                if any(line.added for line in window):
                    hits.append(window)
                else:
                    seen_unchanged = True
        if hits:
            return _placement(_nearest(hits, hint), placed_by or name)
    partial = _partial(sides, lines)
    if partial:
        found = _nearest([(line,) for line in partial], hint)
        return _placement(found, placed_by or PlacedBy.PARTIAL)
    if seen_unchanged or partial == []:
        return DropReason.UNCHANGED_LINE
    return DropReason.UNPLACED


_Pass = tuple[PlacedBy, list[str], Callable[[str], str], bool]


def _passes(lines: list[str]) -> Iterator[_Pass]:
    yield PlacedBy.EXACT, [_exact(line) for line in lines], _exact, False
    squashed = [_squashed(line) for line in lines if line.strip()]
    yield PlacedBy.WHITESPACE, squashed, _squashed, True
    unmarked = _unmarked(lines)
    if unmarked:
        yield PlacedBy.MARKERS, unmarked, _squashed, True


def _unmarked(lines: list[str]) -> list[str] | None:
    """The code of a quoted diff (every line marked `+`, `-` or ` `, one at least `+`, each
    maybe behind its tag `L12#a3f`), without tags, markers and deleted lines; None for
    anything else."""
    marked = [strip_tag(line) for line in lines if line.strip()]
    if not any(line.startswith("+") for line in marked):
        return None
    if not all(line[:1] in ("+", "-", " ") for line in marked):
        return None
    return [_squashed(line[1:]) for line in marked if not line.startswith("-") and line[1:].strip()]


MIN_PARTIAL = 10
"""Characters (whitespace aside) a one-line quote needs before it is looked up inside lines."""


def _partial(sides: Sequence[Side], lines: list[str]) -> list[NewLine] | None:
    """Added lines holding a one-line quote; [] if none but only unchanged ones do; None if
    no line holds it (or the quote is too short or not one line)."""
    needle = _squashed(lines[0]) if len(lines) == 1 else ""
    if len(needle.replace(" ", "")) < MIN_PARTIAL:
        return None
    holding = [line for side in sides for line in side if needle in _squashed(line.text)]
    if not holding:
        return None
    return [line for line in holding if line.added]


def occurrence(sides: Sequence[Side], code: str, end_line: int) -> int:
    """How many runs of the new side hold the same code (whitespace ignored) and end before
    `end_line`: tells repeated code apart without line numbers."""
    target = [_squashed(line) for line in _code_lines(code) if line.strip()]
    if not target:
        return 0
    windows = (w for side in sides for w in _windows(side, target, _squashed, True))
    return sum(1 for window in windows if window[-1].no < end_line)


def place_by_lines(sides: Sequence[Side], start: int | None, end: int | None) -> Outcome:
    """The supplied range, cut to the first hunk in which it overlaps an added line. A range
    past the last line the change shows (99999-100000, say) is unplaced, not an unchanged
    line: nothing says those lines exist."""
    first = start if start is not None else end
    last = end if end is not None else start
    if first is None or last is None:
        return DropReason.UNPLACED
    low, high = min(first, last), max(first, last)
    if low < 1:
        return DropReason.UNPLACED
    for side in sides:
        if any(line.added and low <= line.no <= high for line in side):
            window = tuple(line for line in side if low <= line.no <= high)
            return _placement(window, PlacedBy.LINES)
    if low > last_line(sides):  # past every line the change shows: nothing says they exist
        return DropReason.UNPLACED
    return DropReason.UNCHANGED_LINE


def last_line(sides: Sequence[Side]) -> int:
    """The last new-side line the change shows (0 when it shows none)."""
    return max((line.no for side in sides for line in side), default=0)


def place(sides: Sequence[Side], candidate: Candidate) -> Outcome:
    """Steps 1-2 of validation: the candidate's anchor (when its quoted code does not say
    otherwise), else its code, else its line range. Code found only on unchanged lines, or
    an anchor on unchanged lines, is not moved to the added lines its line range happens to
    touch; a stale anchor's numbers only say which occurrence of repeated code to prefer
    (its hash says they are not the lines meant)."""
    anchors = parse_anchor(candidate.anchor)
    anchored = place_by_anchor(sides, anchors) if anchors else None
    by_code: Outcome = DropReason.UNPLACED
    if candidate.existing_code:
        near = anchored.start_line if isinstance(anchored, Placement) else hint(candidate)
        by_code = locate_code(sides, candidate.existing_code, near)
    if isinstance(anchored, Placement) and _agrees(sides, anchored, candidate, by_code):
        return anchored
    if isinstance(by_code, Placement) or by_code is DropReason.UNCHANGED_LINE:
        return by_code
    if anchored is DropReason.UNCHANGED_LINE:  # hashes checked: not moved by line numbers
        return anchored
    by_lines = place_by_lines(sides, candidate.start_line, candidate.end_line)
    if isinstance(by_lines, Placement):
        return by_lines
    return worse(by_code, by_lines)


ANCHOR_REACH = 10
"""Lines either side of a tag's number searched for its hash when that line has another."""


def place_by_anchor(sides: Sequence[Side], anchors: AnchorRange) -> Outcome | None:
    """The lines the tags name, cut to the first hunk in which they overlap an added line;
    None when a tag is stale (no line within `ANCHOR_REACH` of its number has its hash)."""
    first = _tagged(sides, anchors.start)
    last = first if anchors.end == anchors.start else _tagged(sides, anchors.end)
    if first is None or last is None:
        return None
    low, high = min(first.no, last.no), max(first.no, last.no)
    for side in sides:
        window = tuple(line for line in side if low <= line.no <= high)
        if any(line.added for line in window):
            return _placement(window, PlacedBy.ANCHOR)
    return DropReason.UNCHANGED_LINE


def _tagged(sides: Sequence[Side], anchor: Anchor) -> NewLine | None:
    """The new-side line a tag names: its own line when the hash matches, else the nearest
    within `ANCHOR_REACH` with that hash (the model copied the hash, miscounted the line)."""
    near = [
        line
        for side in sides
        for line in side
        if abs(line.no - anchor.line) <= ANCHOR_REACH and line_hash(line.text) == anchor.digest
    ]
    return min(near, key=lambda line: (abs(line.no - anchor.line), line.no), default=None)


def _agrees(
    sides: Sequence[Side], anchored: Placement, candidate: Candidate, by_code: Outcome
) -> bool:
    """Whether the quoted code allows the anchor: none quoted, found nowhere in the change,
    found within the anchored lines, or found on lines that overlap them."""
    code = candidate.existing_code
    if not code or by_code is DropReason.UNPLACED:
        return True
    if isinstance(by_code, Placement) and not (
        by_code.end_line < anchored.start_line or anchored.end_line < by_code.start_line
    ):
        return True
    window = tuple(
        line
        for side in sides
        for line in side
        if anchored.start_line <= line.no <= anchored.end_line
    )
    return locate_code([window], code, None) is not DropReason.UNPLACED


def anchor_trouble(sides: Sequence[Side], candidate: Candidate) -> str | None:
    """Why the candidate's anchor placed nothing, for a drop's detail: None without one, or
    when it names lines (on unchanged lines, or overruled by the quoted code)."""
    if not candidate.anchor:
        return None
    anchors = parse_anchor(candidate.anchor)
    if anchors is None:
        return f"anchor {candidate.anchor!r} holds no tag (L<line>#<hash>)"
    if place_by_anchor(sides, anchors) is None:
        return f"anchor {candidate.anchor!r} is stale: no line near it has its hash"
    return None


def line_range(candidate: Candidate) -> tuple[int | None, int | None]:
    """The lines the candidate names: its start/end lines, else its anchor's tag numbers (a
    hint for code lookups and the Relocation request, never a placement by itself)."""
    if candidate.start_line is not None or candidate.end_line is not None:
        return candidate.start_line, candidate.end_line
    anchors = parse_anchor(candidate.anchor)
    if anchors is None:
        return None, None
    return anchors.start.line, anchors.end.line


def hint(candidate: Candidate) -> int | None:
    """The line the model pointed at: where to prefer an occurrence of repeated code."""
    start, end = line_range(candidate)
    return start if start is not None else end


def worse(*misses: Outcome) -> DropReason:
    """The reason to report for a candidate missed several ways: unchanged line if any said so."""
    if DropReason.UNCHANGED_LINE in misses:
        return DropReason.UNCHANGED_LINE
    return DropReason.UNPLACED
