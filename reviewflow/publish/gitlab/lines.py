"""GitLab's `line_range` for a multi-line comment: each end's `line_code`, from the merge
request's diff (`GET .../merge_requests/:iid/diffs`).

GitLab names a diff line `<sha1(new path)>_<old position>_<new position>`, counting as its diff
parser does: an added line carries the old side's next line number; a context line both of its
numbers. An end is `type: new` on an added line, `old` otherwise (GitLab's API docs).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from reviewflow.pullrequest.models import NewComment

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")

DiffLines = dict[int, tuple[int, bool]]
"""A file's new-side lines in the diff: new line -> (old position, added)."""


def diff_lines(diff: str) -> DiffLines:
    """The new-side lines of one file's unified diff (GitLab's `diff` field: hunks only)."""
    lines: DiffLines = {}
    old = new = 0
    for line in diff.splitlines():
        hunk = _HUNK.match(line)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
        elif line.startswith("+"):
            lines[new] = (old, True)
            new += 1
        elif line.startswith("-"):
            old += 1
        elif line.startswith(" ") or line == "":
            lines[new] = (old, False)
            old, new = old + 1, new + 1
    return lines


def files_lines(diffs: Iterable[Mapping[str, Any]]) -> dict[str, DiffLines]:
    """Each changed file's new-side lines, by new path (deleted files left out)."""
    return {
        str(d["new_path"]): diff_lines(str(d.get("diff") or ""))
        for d in diffs
        if not d.get("deleted_file") and d.get("new_path")
    }


def line_code(path: str, old: int, new: int) -> str:
    return f"{hashlib.sha1(path.encode()).hexdigest()}_{old}_{new}"


def line_range(comment: NewComment, lines: DiffLines) -> dict[str, Any] | None:
    """`position[line_range]` for `comment`'s lines; None for one line, or when an end is not
    a line of the diff (the comment then goes on its last line alone)."""
    if comment.start_line >= comment.end_line:
        return None
    ends = {}
    for name, new in (("start", comment.start_line), ("end", comment.end_line)):
        if new not in lines:
            return None
        old, added = lines[new]
        ends[name] = {
            "line_code": line_code(comment.path, old, new),
            "type": "new" if added else "old",
            "old_line": None if added else old,
            "new_line": new,
        }
    return ends
