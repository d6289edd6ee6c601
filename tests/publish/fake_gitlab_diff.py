"""The fake GitLab's reading of a merge request's diff: which new-side lines it holds, with the
old-side position GitLab's diff parser gives each, and the check of a discussion's `line_range`
against it (GitLab's 400 when an end's `line_code` is not the diff's)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

Json = dict[str, Any]

LINE_CODE_REFUSED = (
    '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
)


class ApiError(Exception):
    """GitLab's refusal: status and JSON body."""

    def __init__(self, status: int, message: str, key: str = "message") -> None:
        super().__init__(message)
        self.status = status
        self.body: Json = {key: message}


def checked_range(diff: str, path: str, line: int, given: Any) -> Json:
    """The range as GitLab stores it; its 400 unless each end's `line_code` names a line of
    the diff (`<sha1(new path)>_<old>_<new>`), its `type` says whether the line is added,
    the range ends on the position's line and starts at or before it."""
    lines = walk(diff)
    digest = hashlib.sha1(path.encode()).hexdigest()
    ends: Json = {}
    for name in ("start", "end"):
        end = given.get(name) if isinstance(given, dict) else None
        if not isinstance(end, dict):
            raise ApiError(400, f"position[line_range][{name}] is missing", key="error")
        code = str(end.get("line_code") or "").split("_")
        if len(code) != 3 or not code[1].isdigit() or not code[2].isdigit():
            raise ApiError(400, LINE_CODE_REFUSED)
        old, new = int(code[1]), int(code[2])
        if code[0] != digest or new not in lines or lines[new][0] != old:
            raise ApiError(400, LINE_CODE_REFUSED)
        if end.get("type") != ("new" if lines[new][1] else "old"):
            raise ApiError(400, LINE_CODE_REFUSED)
        ends[name] = {
            "line_code": end["line_code"],
            "type": end["type"],
            "old_line": None if lines[new][1] else old,
            "new_line": new,
        }
    if ends["end"]["new_line"] != line or ends["start"]["new_line"] > line:
        raise ApiError(400, LINE_CODE_REFUSED)
    return ends


def walk(diff: str) -> dict[int, tuple[int, bool]]:
    """The fake's reading of a diff, as GitLab's parser counts: new line -> (old position,
    added)."""
    out: dict[int, tuple[int, bool]] = {}
    old = new = 0
    for text in diff.split("\n"):
        if text.startswith("@@"):
            sides = text.split(" ")
            old = int(sides[1][1:].split(",")[0])
            new = int(sides[2][1:].split(",")[0])
        elif text[:1] == "+":
            out[new], new = (old, True), new + 1
        elif text[:1] == "-":
            old += 1
        elif text[:1] == " ":
            out[new], old, new = (old, False), old + 1, new + 1
    return out


def added_hunks(lines: Iterable[int]) -> str:
    """A diff adding `lines` (each run of consecutive lines a hunk)."""
    hunks: list[list[int]] = []
    for line in sorted(lines):
        if hunks and hunks[-1][-1] == line - 1:
            hunks[-1].append(line)
        else:
            hunks.append([line])
    out = []
    for run in hunks:
        out.append(f"@@ -{run[0]},0 +{run[0]},{len(run)} @@")
        out += [f"+line {n}" for n in run]
    return "\n".join(out) + ("\n" if out else "")
