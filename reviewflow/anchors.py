"""Hash-anchored lines: a new-side line named by its number and a short hash of its content.

The main prompt tags every new-side line of the diff `L42#a3f` (line 42, hash `a3f`);
`code_comment` may name a finding's lines by those tags (`anchor`: `L42#a3f`, or
`L42#a3f-L45#b12` for a range), and placement checks each hash against the real line, so a
model that miscounts lines cannot put a finding on the wrong line unnoticed.

The hash is the first 3 hex digits of SHA-256 over the line's text in UTF-8 with trailing
whitespace (and a CR) removed: leading and inner whitespace count, so equal statements at
different indentation get different tags, and a line's tag is the same in every review.
Used by the prompt (review stage) and by placement (findings stage): it lives low.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

HASH_DIGITS = 3
_TAG = re.compile(r"L(\d{1,9})#([0-9a-fA-F]{3})(?![0-9a-fA-F])")


@dataclass(frozen=True, slots=True)
class Anchor:
    """One tag: the line number the model gave and the hash it copied (lowercase)."""

    line: int
    digest: str


@dataclass(frozen=True, slots=True)
class AnchorRange:
    """A finding's anchor: its first and last tag (the same tag for one line)."""

    start: Anchor
    end: Anchor


def line_hash(text: str) -> str:
    """The 3-hex-digit content hash of one line (trailing whitespace ignored)."""
    data = text.rstrip().encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:HASH_DIGITS]


def tag(line: int, text: str) -> str:
    """The tag the prompt shows for new-side line `line` holding `text`: `L42#a3f`."""
    return f"L{line}#{line_hash(text)}"


def parse_anchor(value: str | None) -> AnchorRange | None:
    """The tags in an `anchor` value: the first and the last one (`L42#a3f`, `L42#a3f-L45#b12`,
    also a list of tags or a line quoted with its tag); None when it holds no tag (missing or
    malformed: placement then falls back to the quoted code and the line numbers)."""
    if not value:
        return None
    found = [Anchor(int(no), digest.lower()) for no, digest in _TAG.findall(value)]
    found = [anchor for anchor in found if anchor.line >= 1]
    if not found:
        return None
    first, last = found[0], found[-1]
    return AnchorRange(first, last) if first.line <= last.line else AnchorRange(last, first)


def strip_tag(line: str) -> str:
    """`line` without a leading tag and the one space after it (a quote copied with its tag)."""
    match = _TAG.match(line.lstrip())
    if match is None:
        return line
    rest = line.lstrip()[match.end() :]
    return rest[1:] if rest.startswith(" ") else rest
