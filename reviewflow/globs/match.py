"""Case-insensitive path globs: gitignore-style wildcards plus `{a,b}` expansion, safe on any input.

Semantics (those of a `.gitignore` line as pathspec's gitignore pattern reads it, plus braces):

- Paths are repository-relative POSIX paths such as `src/app/main.py`.
- A pattern without a `/` (other than a trailing one), such as `*.py` or `Dockerfile`, matches
  the basename at any depth. A pattern with a `/` is anchored at the repository root
  (`src/*.py` matches `src/a.py`, not `lib/src/a.py`); a leading `/` or `./` anchors too.
- `*` and `?` never cross `/`; `**` spans any number of directories (also none);
  `[abc]`, `[a-z]` and `[!a]` are character classes (never matching `/`); `\\` escapes the
  next character.
- Directory mode (`directories=True`, the default, for `include`/`exclude`): like a
  `.gitignore` line, a pattern that names a directory matches everything beneath it (`vendor`
  and `vendor/` both match `vendor/lib/x.go`; `*.js` matches `chart.js/src/main.py`).
- File mode (`directories=False`, for rule `path` patterns and the system rules): a pattern
  describes the file itself, never a parent directory. A slash-free pattern matches the
  basename only (`*.js` does not match `chart.js/src/main.py`), an anchored one must match the
  whole path (`src/*` matches `src/a.py`, not `src/a/b.py`). Only an explicit `/**` or trailing
  `/` reaches beneath a directory (`vendor/` and `vendor/**` match `vendor/lib/x.go`).
- `{a,b}` alternatives are expanded first (nested, anywhere, `{,x}` gives an empty alternative);
  braces without a top-level comma, or without a closing brace, are literal.
- Matching ignores case unless `ignore_case=False`.
- Negation (`!x`), comments (`#x`) and blank patterns mean nothing here and are rejected.

Patterns may come from an untrusted repository, so they are bounded (MAX_PATTERN_LENGTH,
MAX_BRACE_DEPTH, MAX_EXPANSIONS; ValueError "invalid glob ..." beyond) and translated so that
matching never backtracks badly: each segment's `*` commits to the leftmost occurrence of the
literal run after it (`(?>[^/]*?run)`, as CPython's fnmatch does), and each `**` commits to the
leftmost run of whole components after it, so a match takes polynomial time, about
len(path) * len(pattern) steps, whatever the pattern.

All patterns of a set are compiled once into a few alternations that keep the patterns' order:
slash-free patterns are matched against each path component (the basename in file mode), with
literal names and `*.<suffix>` looked up in dicts; anchored ones against the path, and in file
mode only those whose last segment can match the basename run. Finding the first matching
pattern costs a few regex matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from reviewflow.globs.braces import (
    MAX_BRACE_DEPTH,
    MAX_EXPANSIONS,
    MAX_PATTERN_LENGTH,
    expand_braces,
    pattern_repr,
)
from reviewflow.globs.classes import char_class

__all__ = [
    "MAX_BRACE_DEPTH",
    "MAX_EXPANSIONS",
    "MAX_PATTERN_LENGTH",
    "GlobSet",
    "expand_braces",
]

# Every alternative is tried against every path: bound the work an untrusted rules file can ask.
MAX_SET_ALTERNATIVES = 512
_GLOB_CHARS = re.compile(r"[*?\[\]\\{}]")


class GlobSet:
    """An ordered set of glob patterns compiled once; `match` returns the first that matches."""

    __slots__ = ("_anchored", "_components", "_directories", "_ignore_case", "_patterns")

    def __init__(
        self, patterns: Sequence[str], *, ignore_case: bool = True, directories: bool = True
    ) -> None:
        if isinstance(patterns, str):
            raise TypeError("GlobSet takes a sequence of patterns, not one string")
        self._patterns = tuple(patterns)
        self._ignore_case = ignore_case
        self._directories = directories
        self._anchored = _Anchored(ignore_case)
        self._components = _Components(ignore_case, basename_only=not directories)
        total = 0
        for index, pattern in enumerate(self._patterns):
            alternatives = expand_braces(pattern)
            total += len(alternatives)
            if total > MAX_SET_ALTERNATIVES:
                raise ValueError(
                    f"invalid glob {pattern_repr(pattern)}: the patterns expand to more than "
                    f"{MAX_SET_ALTERNATIVES} alternatives"
                )
            for alternative in alternatives:
                piece = _translate(alternative, pattern, directories)
                if piece.component is None:
                    self._anchored.add(piece.regex, index, piece.basename)
                else:
                    self._components.add(piece.text, piece.component, index)
        self._anchored.compile()
        self._components.compile()

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns as given, in order."""
        return self._patterns

    @property
    def directories(self) -> bool:
        """Whether a pattern naming a directory matches everything beneath it."""
        return self._directories

    def match_index(self, path: str) -> int | None:
        """The index of the first pattern matching `path`, or None."""
        return self._components.first(path, self._anchored.first(path))

    def match(self, path: str) -> str | None:
        """The first pattern matching `path`, or None."""
        index = self.match_index(path)
        return None if index is None else self._patterns[index]

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)

    def __iter__(self) -> Iterator[str]:
        return iter(self._patterns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GlobSet):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[tuple[str, ...], bool, bool]:
        return self._patterns, self._ignore_case, self._directories

    def __repr__(self) -> str:
        mode = "" if self._directories else ", directories=False"
        return f"GlobSet({list(self._patterns)!r}{mode})"


class _Alternation(NamedTuple):
    """Regex fragments joined as `(a)|(b)|...`: the first alternative that matches wins."""

    regex: re.Pattern[str]
    owners: tuple[int, ...]

    @classmethod
    def build(cls, pieces: list[tuple[str, int]], ignore_case: bool) -> _Alternation | None:
        if not pieces:
            return None
        flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
        source = "|".join(f"({regex})" for regex, _ in pieces)
        try:
            compiled = re.compile(source, flags)
        except re.error as exc:  # classes were compiled one by one already; kept for safety
            raise ValueError(f"invalid glob set: {exc}") from None
        return cls(compiled, tuple(owner for _, owner in pieces))

    def first(self, text: str, *, whole: bool = False) -> int | None:
        found = (self.regex.fullmatch if whole else self.regex.match)(text)
        if found is None or found.lastindex is None:
            return None
        return self.owners[found.lastindex - 1]


def _literal_key(text: str, fold: bool) -> str | None:
    """`text` itself when it has no glob characters, `.x` for `*.x`, else None (lowered)."""
    key = text.lower() if fold else text
    if not _GLOB_CHARS.search(key):
        return key
    if key.startswith("*.") and not _GLOB_CHARS.search(key, 1):
        return key[1:]
    return None


def _earliest(best: int | None, hit: int | None) -> int | None:
    return hit if best is None or (hit is not None and hit < best) else best


class _Anchored:
    """Patterns matched against the whole path, in alternations keyed by the basename they need.

    In file mode a pattern whose last segment is a literal name or `*.<suffix>` can only match
    paths with that basename or suffix, so only the alternations for the path's basename and
    its suffixes run, besides the one for the other patterns.
    """

    __slots__ = ("_fold", "_keyed", "_pieces", "_rest")

    def __init__(self, ignore_case: bool) -> None:
        self._fold = ignore_case
        self._pieces: dict[str | None, list[tuple[str, int]]] = {}
        self._keyed: dict[str, _Alternation] = {}
        self._rest: _Alternation | None = None

    def add(self, regex: str, index: int, basename: str | None) -> None:
        key = None if basename is None else _literal_key(basename, self._fold)
        self._pieces.setdefault(key, []).append((regex, index))

    def compile(self) -> None:
        for key, pieces in self._pieces.items():
            alternation = _Alternation.build(pieces, self._fold)
            if key is None:
                self._rest = alternation
            elif alternation is not None:
                self._keyed[key] = alternation

    def first(self, path: str) -> int | None:
        best = None if self._rest is None else self._rest.first(path)
        keyed = self._keyed
        if not keyed:
            return best
        name = path[path.rfind("/") + 1 :]
        name = name.lower() if self._fold else name
        dot = 0
        while dot != -1:
            alternation = keyed.get(name[dot:])
            if alternation is not None:
                best = _earliest(best, alternation.first(path))
            dot = name.find(".", dot + 1)
        return best


class _Components:
    """Slash-free patterns: each matches when it matches one whole component of the path.

    Literal names (`Dockerfile`) and `*.<literal suffix>` (`*.py`) are looked up in dicts;
    the others share one alternation. The first pattern is the smallest index found. With
    `basename_only` (file mode) only the last component is tried.
    """

    __slots__ = ("_basename_only", "_fold", "_names", "_pieces", "_regex", "_suffixes")

    def __init__(self, ignore_case: bool, *, basename_only: bool) -> None:
        self._fold = ignore_case
        self._basename_only = basename_only
        self._names: dict[str, int] = {}
        self._suffixes: dict[str, int] = {}
        self._pieces: list[tuple[str, int]] = []
        self._regex: _Alternation | None = None

    def add(self, text: str, component: str, index: int) -> None:
        key = _literal_key(text, self._fold)
        if key is None:
            self._pieces.append((component, index))
        elif _GLOB_CHARS.search(text):  # `*.suffix`
            self._suffixes.setdefault(key, index)
        else:
            self._names.setdefault(key, index)

    def compile(self) -> None:
        self._regex = _Alternation.build(self._pieces, self._fold)

    def first(self, path: str, best: int | None) -> int | None:
        names, suffixes, alternation = self._names, self._suffixes, self._regex
        if not names and not suffixes and alternation is None:
            return best
        parts = [path[path.rfind("/") + 1 :]] if self._basename_only else path.split("/")
        for part in parts:
            key = part.lower() if self._fold else part
            found = names.get(key)
            dot = key.find(".")
            while dot != -1:
                found = _earliest(found, suffixes.get(key[dot:]))
                dot = key.find(".", dot + 1)
            if alternation is not None:
                found = _earliest(found, alternation.first(part, whole=True))
            best = _earliest(best, found)
        return best


class _Piece(NamedTuple):
    """One translated brace-free pattern."""

    text: str  # the pattern as stripped
    regex: str  # matched at the start of the path (when `component` is None)
    component: str | None  # for slash-free patterns: matched against one whole component
    basename: str | None  # file mode: the last segment, which must match the basename


def _translate(alternative: str, original: str, directories: bool) -> _Piece:
    """Translate one brace-free pattern; ValueError when it is invalid."""
    text = alternative.strip()
    if text.startswith("./"):
        text = "/" + text[2:].lstrip("/")
    if not text or text.startswith("#") or text == "/":
        raise ValueError(f"invalid glob {pattern_repr(original)}: empty pattern")
    if text.startswith("!"):
        raise ValueError(f"invalid glob {pattern_repr(original)}: negation ('!') is not supported")
    segments = _normalize(text)
    if "/" not in text and segments[-1] not in ("*", "**"):
        return _Piece(text, "", _segment(segments[-1], original), None)
    if segments == ["**"]:  # `**` matches every path, `**/` every path in a directory
        return _Piece(text, "[^/]*/" if text.endswith("/") else ".", None, None)
    if segments in (["**", "*"], ["**", "*", "**"]):  # `*`, `**/*`; `*/`, `**/*/**`
        return _Piece(text, "." if len(segments) == 2 else "[^/]*/", None, None)
    basename = None if directories or segments[-1] == "**" else segments[-1]
    return _Piece(text, _path_regex(segments, original, directories), None, basename)


def _normalize(text: str) -> list[str]:
    """The segments of a gitignore pattern: unanchored ones get a leading `**`, `x/` is `x/**`."""
    segments = text.split("/")
    if not segments[0]:
        del segments[0]
    elif segments[0] != "**" and (len(segments) == 1 or segments[1:] == [""]):
        segments.insert(0, "**")
    if not segments[-1] and len(segments) > 1 and segments[-2] == "**":
        segments[-1:] = ["*", "**"]  # `x/**/`: directories beneath x (at least one level)
    elif not segments[-1]:
        segments[-1] = "**"
    out: list[str] = []
    for segment in segments:
        if not (segment == "**" and out and out[-1] == "**"):
            out.append(segment)
    return out


def _path_regex(segments: list[str], original: str, directories: bool) -> str:
    """A regex for normalized segments, matched at the start of the path (`re.match`).

    Segments between `**` form blocks of whole components; each segment is followed by `/`,
    `(?![^/])` or `\\Z`, so it ends where its component does. A block after a `**` commits
    (atomically) to its leftmost position, which loses nothing because what follows it starts
    with `**` or, in directory mode, may be anything; only the last block in file mode, which
    must end the path, is tried at each component from the right (no nesting, so linear).
    """
    blocks: list[list[str]] = [[]]
    for segment in segments:
        if segment == "**":
            blocks.append([])
        else:
            blocks[-1].append(segment)
    out = ["/".join(_segment(s, original) for s in blocks[0])]
    last = len(blocks) - 1
    for number, block in enumerate(blocks[1:], 1):
        lead = "/" if number > 1 or blocks[0] else ""
        body = "/".join(_segment(s, original) for s in block)
        if not block:  # a trailing `**`: anything beneath
            out.append(lead)
        elif number == last and not directories:
            out.append(f"{lead}(?:.*/)?{body}\\Z")
        else:
            out.append(f"{lead}(?>(?:.*?/)??{body}(?![^/]))")
    if last == 0:
        out.append("(?![^/])" if directories else "\\Z")
    return "".join(out)


def _segment(segment: str, original: str) -> str:
    """A regex matching one whole path component (it ends where a `/` or the path ends)."""
    if segment == "*":
        return "[^/]+"
    runs = [""]  # the literal runs around the stars
    for atom in _atoms(segment, original):
        if atom is None:
            runs.append("")
        else:
            runs[-1] += atom
    if len(runs) == 1:
        return runs[0]
    middle = "".join(f"(?>[^/]*?{run})" for run in runs[1:-1])
    return f"(?>{runs[0]}{middle}[^/]*{runs[-1]})"


def _atoms(segment: str, original: str) -> list[str | None]:
    """The regex atoms of one segment; None stands for `*` (consecutive stars are one)."""
    atoms: list[str | None] = []
    index, end = 0, len(segment)
    while index < end:
        char = segment[index]
        index += 1
        if char == "\\":
            if index == end:
                raise ValueError(f"invalid glob {pattern_repr(original)}: trailing backslash")
            atoms.append(re.escape(segment[index]))
            index += 1
        elif char == "*":
            if not atoms or atoms[-1] is not None:
                atoms.append(None)
        elif char == "?":
            atoms.append("[^/]")
        elif char == "[":
            atom, index = char_class(segment, index, original)
            atoms.append(atom)
        else:
            atoms.append(re.escape(char))
    return atoms
