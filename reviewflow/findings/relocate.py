"""Validation steps 1-4: group candidates by file, place them on changed lines, relocate."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reviewflow.findings.answers import (
    AnswerError,
    Asked,
    Question,
    ask,
    listing_prompts,
    parse_array,
    text_field,
)
from reviewflow.findings.models import (
    Dropped,
    DropReason,
    FileFindings,
    PlacedBy,
    PlacedCandidate,
)
from reviewflow.findings.normalize import Problem, check_fields, dropped, normalize_path
from reviewflow.findings.placement import (
    Placement,
    Side,
    anchor_trouble,
    hint,
    last_line,
    line_range,
    locate_code,
    new_sides,
    occurrence,
    place,
    worse,
)
from reviewflow.git.models import FileDiff
from reviewflow.models import Candidate
from reviewflow.review.records import Send

RELOCATION_FORMAT = '[{"id": "c-0", "existing_code": "<exact code lines>"}]'
RELOCATION_WRAPPERS = ("relocations", "candidates")


def group_candidates(
    candidates: Sequence[Candidate], reviewed: Mapping[str, FileDiff]
) -> tuple[dict[str, list[Candidate]], list[Dropped]]:
    """Candidates by the reviewed file they name (in input order); others dropped as outside."""
    groups: dict[str, list[Candidate]] = {}
    outside: list[Dropped] = []
    for candidate in candidates:
        path = normalize_path(candidate.file or candidate.path, reviewed)
        if path in reviewed:
            groups.setdefault(path, []).append(candidate)
        else:
            detail = f"not a reviewed file of this change (named while reviewing {candidate.path})"
            outside.append(dropped(path, candidate, DropReason.OUTSIDE_CHANGE, detail))
    return groups, outside


def relocate_file(file: FileDiff, candidates: Sequence[Candidate], send: Send) -> FileFindings:
    """Place each candidate on the file's changed lines (by code, by lines, else one Relocation
    request for the rest); IDs `c-0`, `c-1`, ... follow the order of `candidates`."""
    sides = new_sides(file)
    placed: list[PlacedCandidate] = []
    drops: list[Dropped] = []
    pending: dict[str, tuple[Candidate, DropReason]] = {}
    for index, candidate in enumerate(candidates):
        cid = f"c-{index}"
        fields = check_fields(candidate)
        if isinstance(fields, Problem):
            drops.append(dropped(file.path, candidate, *fields))
            continue
        outcome = place(sides, candidate)
        if isinstance(outcome, Placement):
            placed.append(_placed(cid, candidate, outcome, sides))
        else:
            pending[cid] = (candidate, outcome)
    changed = tuple(sorted(file.changed_lines))
    asked: Asked[dict[str, str]] = Asked(None, ())
    if pending and changed:
        asked, more, missed = _relocate(file, sides, pending, send)
        placed += more
        drops += missed
    else:
        drops += [
            _miss(file.path, c, miss, "no added lines", sides) for c, miss in pending.values()
        ]
    placed.sort(key=lambda p: int(p.id[2:]))
    return FileFindings(
        path=file.path,
        complete=not asked.warnings,
        warnings=asked.warnings,
        records=asked.records,
        placed=tuple(placed),
        dropped=tuple(drops),
        changed_lines=changed,
    )


def _relocate(
    file: FileDiff,
    sides: Sequence[Side],
    pending: Mapping[str, tuple[Candidate, DropReason]],
    send: Send,
) -> tuple[Asked[dict[str, str]], list[PlacedCandidate], list[Dropped]]:
    """Step 3: one tool-free Relocation request for the pending candidates, its answer placed
    by the same lookup as the candidates' own code."""
    system, user = listing_prompts(
        "relocate", RELOCATION_FORMAT, file.path, diff_text(file), _listing(pending)
    )
    question = Question(
        stage="relocate",
        path=file.path,
        system=system,
        user=user,
        answer_format=RELOCATION_FORMAT,
        warning_code="relocation_failed",
        what=f"relocation for {file.path}",
    )
    asked = ask(question, lambda text: _parse_relocation(text, pending), send)
    found = asked.value or {}
    placed: list[PlacedCandidate] = []
    drops: list[Dropped] = []
    for cid, (candidate, miss) in pending.items():
        code = found.get(cid)
        outcome = (
            miss if code is None else locate_code(sides, code, hint(candidate), PlacedBy.RELOCATION)
        )
        if isinstance(outcome, Placement):
            placed.append(_placed(cid, candidate, outcome, sides))
            continue
        why = "relocation failed" if asked.value is None else "relocation did not place it"
        drops.append(_miss(file.path, candidate, worse(miss, outcome), why, sides))
    return asked, placed, drops


def _miss(
    path: str, candidate: Candidate, reason: DropReason, why: str, sides: Sequence[Side]
) -> Dropped:
    where = "only on unchanged lines in the change"
    if reason is not DropReason.UNCHANGED_LINE:
        lines = [n for n in line_range(candidate) if n is not None]
        past = lines and min(lines) > last_line(sides)
        span = "-".join(str(n) for n in sorted(set(lines)))
        named = f"lines {span} are" if "-" in span else f"line {span} is"
        where = f"{named} past the end of the change" if past else "not found in the change"
    trouble = anchor_trouble(sides, candidate)
    where = f"{trouble}; {where}" if trouble else where
    return dropped(path, candidate, reason, f"{where}; {why}")


def _placed(
    cid: str, candidate: Candidate, placement: Placement, sides: Sequence[Side]
) -> PlacedCandidate:
    return PlacedCandidate(
        id=cid,
        candidate=candidate,
        start_line=placement.start_line,
        end_line=placement.end_line,
        existing_code=placement.existing_code,
        placed_by=placement.placed_by,
        occurrence=occurrence(sides, placement.existing_code, placement.end_line),
    )


def _listing(pending: Mapping[str, tuple[Candidate, DropReason]]) -> str:
    rows = [
        {
            "id": cid,
            "title": c.title,
            "problem": c.problem,
            "start_line": line_range(c)[0],
            "end_line": line_range(c)[1],
            "existing_code": c.existing_code,
        }
        for cid, (c, _) in pending.items()
    ]
    return json.dumps(rows, indent=1, ensure_ascii=False)


def _parse_relocation(text: str, pending: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in parse_array(text, RELOCATION_WRAPPERS):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise AnswerError('every entry must be an object with a string "id"')
        if item["id"] not in pending:
            raise AnswerError(f"unknown candidate ID {item['id']!r}")
        code = text_field(item, "existing_code")
        if code and code.strip():
            found[item["id"]] = code
    return found


def diff_text(file: FileDiff) -> str:
    """The file's hunks as unified diff text (headers and bodies)."""
    parts: list[str] = []
    for hunk in file.hunks:
        header = f"@@ -{hunk.old_start},{hunk.old_count} +{hunk.new_start},{hunk.new_count} @@"
        parts.append(f"{header} {hunk.section}".rstrip())
        parts.extend(hunk.body)
    return "\n".join(parts)
