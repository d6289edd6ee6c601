"""In-code suppressions: `reviewflow: ignore` and `reviewflow: ignore-file` comments.

    x = eval(text)  # reviewflow: ignore[security] the input is our own constant
    // reviewflow: ignore
    -- reviewflow: ignore-file[performance] generated migration

A comment `reviewflow: ignore` that ends a code line silences findings on that line only; one alone
on its line silences findings on that line and on the next line (the very next line, blank or not),
so a trailing comment never reaches the line below it; `reviewflow: ignore-file` in the first
`FILE_HEADER_LINES` lines silences the whole file. `[category, ...]` (000's six categories or their
aliases) narrows it to those categories; the rest of the comment is the reason. Only a comment in a
syntax of the file's language counts (`comments.comment_openers`). Suppressions are read from the
file as it is after the change; one on a line the change adds is `added` (see
`review.honour_new_suppressions`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from reviewflow.findings.comments import comment_openers
from reviewflow.findings.models import Finding
from reviewflow.findings.normalize import normalize_category
from reviewflow.models import Category, ReviewWarning

FILE_HEADER_LINES = 10
MARKER = "reviewflow:"
_CLOSERS = ("*/", "-->")
_SEPARATORS = " \t:-\u2013\u2014"


@dataclass(frozen=True, slots=True)
class Suppression:
    """One suppression comment: where it is, what it silences, why, and whether the change
    under review added it."""

    path: str
    line: int
    whole_file: bool
    categories: frozenset[Category]  # empty: every category
    reason: str
    added: bool
    alone: bool = False  # the comment is alone on its line: it also covers the next line

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def comment(self) -> str:
        """The directive as written in words: `reviewflow: ignore[security]`."""
        kind = "ignore-file" if self.whole_file else "ignore"
        names = ",".join(sorted(c.value for c in self.categories))
        return f"{MARKER} {kind}" + (f"[{names}]" if names else "")

    def covers(self, finding: Finding) -> bool:
        """Whether this suppression silences `finding` (a finding of its own file)."""
        if self.categories and finding.category not in self.categories:
            return False
        if self.whole_file or finding.start_line <= self.line <= finding.end_line:
            return True
        return self.alone and self.line == finding.start_line - 1


@lru_cache(maxsize=64)
def _pattern(openers: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(opener) for opener in sorted(openers, key=len, reverse=True))
    return re.compile(
        rf"(?:{alternatives})[ \t*!/#;%-]*reviewflow:[ \t]*(ignore-file|ignore)(?![\w-])"
        r"(?:\[([^\]]*)\])?(.*)$",
        re.IGNORECASE,
    )


def find_suppressions(
    path: str, text: str, added_lines: Collection[int]
) -> tuple[list[Suppression], list[ReviewWarning]]:
    """Every suppression comment of the file `path` (its text after the change; `added_lines`
    are the lines the change adds), and warnings for ones that cannot apply."""
    if MARKER not in text.lower():
        return [], []
    pattern = _pattern(comment_openers(path))
    found: list[Suppression] = []
    warnings: list[ReviewWarning] = []
    for number, line in enumerate(text.split("\n"), start=1):  # numbered as git numbers them
        if MARKER not in line.lower():
            continue
        match = pattern.search(line)
        if match is None:
            continue
        whole_file = match.group(1).lower() == "ignore-file"
        if whole_file and number > FILE_HEADER_LINES:
            late = f"is honoured only in the first {FILE_HEADER_LINES} lines: it silences nothing"
            warnings.append(_warning(path, number, f"{MARKER} ignore-file", late))
            continue
        categories, unknown = _categories(match.group(2))
        if unknown:
            accepted = ", ".join(c.value for c in Category)
            what = ", ".join(repr(name) for name in unknown)
            note = f"names unknown categories {what} (accepted: {accepted})"
            warnings.append(_warning(path, number, match.group(0).strip(), note))
            if not categories:
                continue  # silencing every category instead would go beyond what was asked
        reason = _reason(match.group(3))
        alone = not line[: match.start()].strip()
        found.append(
            Suppression(path, number, whole_file, categories, reason, number in added_lines, alone)
        )
    return found, warnings


def _warning(path: str, line: int, comment: str, problem: str) -> ReviewWarning:
    return ReviewWarning("suppression_ignored", f"line {line}: `{comment}` {problem}", path)


def _categories(listed: str | None) -> tuple[frozenset[Category], list[str]]:
    if listed is None:
        return frozenset(), []
    names = [name for name in re.split(r"[\s,]+", listed) if name]
    known = {name: normalize_category(name) for name in names}
    return (
        frozenset(c for c in known.values() if c is not None),
        [name for name, category in known.items() if category is None],
    )


def _reason(rest: str) -> str:
    text = rest.strip()
    for closer in _CLOSERS:
        if text.endswith(closer):
            text = text[: -len(closer)].rstrip()
    return text.lstrip(_SEPARATORS).strip()


def suppression_for(finding: Finding, suppressions: Sequence[Suppression]) -> Suppression | None:
    """The suppression that silences `finding`, if any: one the change did not add first,
    then a file-wide one, then the nearest line."""
    covering = [s for s in suppressions if s.path == finding.path and s.covers(finding)]
    if not covering:
        return None
    # One that was there before the change first (it is honoured everywhere), then file-wide.
    return min(
        covering, key=lambda s: (s.added, not s.whole_file, abs(s.line - finding.start_line))
    )
