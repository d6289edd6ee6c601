"""What Bitbucket Data Center's comments need beyond the neutral text: markers it keeps and
never shows, Markdown instead of the HTML it escapes, and a comment's anchor from the pull
request's diff.

Bitbucket Data Center renders CommonMark and escapes every HTML tag ("Bitbucket Data Center
doesn't support HTML tags and all HTML tags are escaped", its Markdown syntax guide), so the
hidden `<!-- reviewflow:... -->` markers of `reviewflow.pullrequest.markers` would show as text.
On write, a marker at the start of a body becomes a link reference definition,
`[//]: # (reviewflow:...)`, which CommonMark keeps in the text and never renders; on read it
becomes the HTML comment again, so the markers' parsing is the same on every platform. The
summary's `<details>`/`<summary>` and the footers' `<sub>` (raw tags only our templates write:
model text has every `<` escaped) become bold and italic text; that part is one-way.

The anchor (the REST API's `anchor` of POST `.../pull-requests/{id}/comments`) names a line of
the pull request's effective diff (GET `.../pull-requests/{id}/diff`: since Bitbucket 7.0 the
diff against the merge base): `fileType: TO`, the new-side line, and its `lineType` (ADDED or
CONTEXT, as the diff has it). A multi-line finding is anchored on its last line with
`multilineMarker` / `multilineSpan` from its first (multiline comments, Bitbucket 9.3+; older
servers ignore the fields and keep the last line), only when both ends are lines of the diff.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reviewflow.pullrequest.models import NewComment

_HTML_MARKER = re.compile(r"\A<!-- (reviewflow:[^()\n]*?) -->")
_DC_MARKER = re.compile(r"\A\[//\]: # \((reviewflow:[^()\n]*)\)\n\n")
_DETAILS = re.compile(r"(?<!\\)<details><summary>(.*?)</summary>")
_SUB = re.compile(r"(?<!\\)<sub>(.*?)</sub>")
_CLOSE_DETAILS = re.compile(r"(?<!\\)</details>")

LineTypes = dict[int, str]
"""A file's new-side lines in the diff: line -> ADDED or CONTEXT."""


def to_dc(body: str) -> str:
    """`body` as Bitbucket Data Center should store it: its leading marker as a link
    reference definition, our templates' HTML tags as Markdown."""
    text = _SUB.sub(r"*\1*", _DETAILS.sub(r"**\1**", body))
    text = _CLOSE_DETAILS.sub("", text)
    match = _HTML_MARKER.match(text)
    if match is None:
        return text
    return f"[//]: # ({match.group(1)})\n\n{text[match.end() :]}"


def from_dc(text: str) -> str:
    """A stored comment's text with its leading marker as the HTML comment the markers'
    parsing reads (the inverse of `to_dc` on the marker)."""
    match = _DC_MARKER.match(text)
    if match is None:
        return text
    return f"<!-- {match.group(1)} -->{text[match.end() :]}"


@dataclass(frozen=True)
class PullRequestDiff:
    """The diff comments are anchored on: its hashes and each file's commentable lines."""

    from_hash: str
    to_hash: str
    files: dict[str, LineTypes] = field(default_factory=dict)  # new path -> its lines
    sources: dict[str, str] = field(default_factory=dict)  # new path -> old path (renames)


def path_of(value: Any) -> str:
    """A path as Bitbucket answers it: a string, or `{components, toString}`."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        parts = value.get("components")
        if isinstance(parts, list) and parts:
            return "/".join(str(p) for p in parts)
        return str(value.get("toString") or "")
    return ""


def parse_diff(answer: Mapping[str, Any]) -> PullRequestDiff:
    """The pull request's diff (`diffs[].hunks[].segments[].lines[]`): every ADDED or CONTEXT
    line of each file that still exists, by its new-side (`destination`) number."""
    files: dict[str, LineTypes] = {}
    sources: dict[str, str] = {}
    for diff in _dicts(answer.get("diffs")):
        path = path_of(diff.get("destination"))
        if not path:
            continue  # a deleted file: nothing on the new side
        source = path_of(diff.get("source"))
        if source and source != path:
            sources[path] = source
        lines = files.setdefault(path, {})
        for hunk in _dicts(diff.get("hunks")):
            for segment in _dicts(hunk.get("segments")):
                kind = str(segment.get("type") or "")
                if kind not in ("ADDED", "CONTEXT"):
                    continue
                for line in _dicts(segment.get("lines")):
                    number = line.get("destination")
                    if isinstance(number, int):
                        lines[number] = kind
    return PullRequestDiff(
        from_hash=str(answer.get("fromHash") or ""),
        to_hash=str(answer.get("toHash") or ""),
        files=files,
        sources=sources,
    )


def anchor(comment: NewComment, diff: PullRequestDiff, head_sha: str) -> dict[str, Any] | None:
    """The anchor of `comment` on `diff` (None: its last line is not a line of the diff)."""
    lines = diff.files.get(comment.path, {})
    end = comment.end_line
    if end not in lines:
        return None
    source = comment.old_path if comment.old_path != comment.path else ""
    source = source or diff.sources.get(comment.path, "")
    out: dict[str, Any] = {
        "diffType": "EFFECTIVE",
        "path": comment.path,
        "line": end,
        "lineType": lines[end],
        "fileType": "TO",
        "fromHash": diff.from_hash,
        "toHash": diff.to_hash or head_sha,
    }
    if source:
        out["srcPath"] = source
    start = comment.start_line
    if start < end and start in lines:
        out["multilineMarker"] = {"startLine": start, "startLineType": lines[start]}
        out["multilineSpan"] = {"dstSpanStart": start, "dstSpanEnd": end}
    return out


def _dicts(value: Any) -> Iterable[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
