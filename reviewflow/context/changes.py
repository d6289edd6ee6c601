"""Which definitions a file's change adds, edits, renames or deletes.

A changed line belongs to the innermost definition around it (a method's edit is the
method's, not its class's). Old and new definitions are matched by qualified name; an old one
gone and a new one of the same kind with nearly the same body is a rename.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Literal

from reviewflow.context.records import Definition, FileIndex
from reviewflow.git.models import FileDiff

RENAME_SIMILARITY = 0.6
_MAX_RENAME_PAIRS = 400

Change = Literal["added", "edited", "renamed", "deleted"]
_ORDER = {"deleted": 0, "renamed": 1, "edited": 2, "added": 3}


@dataclass(frozen=True)
class Changed:
    """A changed definition: the new one (the old one when deleted) and how it changed."""

    definition: Definition
    change: Change
    old_name: str | None = None


def changed_symbols(
    file: FileDiff,
    old: FileIndex | None,
    new: FileIndex | None,
    old_text: str | None,
    new_text: str | None,
) -> list[Changed]:
    """The changed definitions of `file`, deleted and renamed first, then by line."""
    added = {n for h in file.hunks for ln in h.lines if ln.kind == "add" and (n := ln.new_no)}
    removed = {n for h in file.hunks for ln in h.lines if ln.kind == "del" and (n := ln.old_no)}
    old_defs = old.definitions if old else ()
    new_defs = new.definitions if new else ()
    touched_new = _touched(new_defs, added)
    touched_old = _touched(old_defs, removed)
    new_by_name = {d.qualname: d for d in new_defs}
    old_by_name = {d.qualname: d for d in old_defs}
    out: dict[str, Changed] = {}
    gone = [d for d in touched_old if d.qualname not in new_by_name]
    fresh = [d for d in touched_new if d.qualname not in old_by_name]
    renames = _renames(gone, fresh, old_text or "", new_text or "")
    for d in touched_new + [
        new_by_name[d.qualname] for d in touched_old if d.qualname in new_by_name
    ]:
        if d.qualname in out:
            continue
        if d.qualname in renames:
            out[d.qualname] = Changed(d, "renamed", renames[d.qualname].name)
        else:
            out[d.qualname] = Changed(d, "edited" if d.qualname in old_by_name else "added")
    renamed_from = {d.qualname for d in renames.values()}
    for d in gone:
        if d.qualname not in renamed_from and f"-{d.qualname}" not in out:
            out[f"-{d.qualname}"] = Changed(d, "deleted")
    return sorted(
        out.values(), key=lambda c: (_ORDER[c.change], c.definition.line, c.definition.qualname)
    )


def _touched(definitions: tuple[Definition, ...], lines: set[int]) -> list[Definition]:
    """The definitions that are the innermost one around at least one of `lines`."""
    marks = sorted(lines)
    order = sorted(
        range(len(definitions)), key=lambda i: (definitions[i].line, -definitions[i].end_line)
    )
    inside = [0] * len(definitions)  # changed lines of each definition's nested definitions
    total = [0] * len(definitions)
    stack: list[int] = []
    for i in order:
        d = definitions[i]
        while stack and definitions[stack[-1]].end_line < d.line:
            stack.pop()
        total[i] = bisect_right(marks, d.end_line) - bisect_left(marks, d.line)
        if stack:
            inside[stack[-1]] += total[i]
        stack.append(i)
    return [d for i, d in enumerate(definitions) if total[i] > inside[i]]


def _renames(
    gone: list[Definition], fresh: list[Definition], old_text: str, new_text: str
) -> dict[str, Definition]:
    """New qualified name -> the old definition it renames."""
    if not gone or not fresh or len(gone) * len(fresh) > _MAX_RENAME_PAIRS:
        return {}
    old_lines = old_text.splitlines()
    new_lines = new_text.splitlines()
    out: dict[str, Definition] = {}
    used: set[str] = set()
    for new in fresh:
        body = "\n".join(new_lines[new.line - 1 : new.end_line]).replace(new.name, "\0")
        best, score = None, RENAME_SIMILARITY
        for old in gone:
            if old.kind != new.kind or old.qualname in used:
                continue
            text = "\n".join(old_lines[old.line - 1 : old.end_line]).replace(old.name, "\0")
            ratio = difflib.SequenceMatcher(None, text, body, autojunk=False).ratio()
            if ratio >= score:
                best, score = old, ratio
        if best is not None:
            out[new.qualname] = best
            used.add(best.qualname)
    return out
