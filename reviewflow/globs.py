"""Case-insensitive path globs: gitignore-style wildcards (via pathspec) plus `{a,b}` expansion.

Semantics (those of a `.gitignore` line, compiled by pathspec's gitignore pattern, plus braces):

- Paths are repository-relative POSIX paths such as `src/app/main.py`.
- A pattern without a `/` (other than a trailing one), such as `*.py` or `Dockerfile`, matches
  the basename at any depth. A pattern with a `/` is anchored at the repository root
  (`src/*.py` matches `src/a.py`, not `lib/src/a.py`); a leading `/` or `./` anchors too.
- `*` and `?` never cross `/`; `**` spans any number of directories (also none);
  `[abc]`, `[a-z]` and `[!a]` are character classes; `\\` escapes the next character.
- Like a `.gitignore` line, a pattern that names a directory matches everything beneath it
  (`vendor` and `vendor/` both match `vendor/lib/x.go`).
- `{a,b}` alternatives are expanded first (nested, anywhere, `{,x}` gives an empty alternative);
  braces without a top-level comma, or without a closing brace, are literal.
- Matching ignores case unless `ignore_case=False`.
- Negation (`!x`), comments (`#x`) and blank patterns mean nothing here and are rejected.

All patterns of a set are compiled once into two alternations that keep the patterns' order:
one for anchored patterns (matched against the path), one for slash-free patterns (matched
against each path component), so finding the first matching pattern costs a few regex matches.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

MAX_EXPANSIONS = 1024
_DIR_MARK = "(?P<ps_d>/)"
_ANY_DIRS = "^(?:.+/)?"
_FILE_OR_DIR = "(?:(?P<ps_d>/)|$)"
_GLOB_CHARS = re.compile(r"[*?\[\]\\{}]")


class GlobSet:
    """An ordered set of glob patterns compiled once; `match` returns the first that matches."""

    __slots__ = ("_anchored", "_components", "_ignore_case", "_patterns")

    def __init__(self, patterns: Sequence[str], *, ignore_case: bool = True) -> None:
        if isinstance(patterns, str):
            raise TypeError("GlobSet takes a sequence of patterns, not one string")
        self._patterns = tuple(patterns)
        self._ignore_case = ignore_case
        anchored: list[tuple[str, int]] = []
        self._components = _Components(ignore_case)
        for index, pattern in enumerate(self._patterns):
            for alternative in expand_braces(pattern):
                regex, segment = _translate(alternative, pattern)
                if segment is None:
                    anchored.append((regex, index))
                else:
                    self._components.add(alternative.strip(), segment, index)
        self._anchored = _Alternation.build(anchored, ignore_case)
        self._components.compile()

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns as given, in order."""
        return self._patterns

    def match_index(self, path: str) -> int | None:
        """The index of the first pattern matching `path`, or None."""
        best = None
        if self._anchored is not None:
            found = self._anchored.regex.match(path)
            if found is not None and found.lastindex is not None:
                best = self._anchored.owners[found.lastindex - 1]
        return self._components.first(path, best)

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
        return (self._patterns, self._ignore_case) == (other._patterns, other._ignore_case)

    def __hash__(self) -> int:
        return hash((self._patterns, self._ignore_case))

    def __repr__(self) -> str:
        return f"GlobSet({list(self._patterns)!r})"


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
        return cls(re.compile(source, flags), tuple(owner for _, owner in pieces))


class _Components:
    """Slash-free patterns: each matches when it matches one whole component of the path.

    Literal names (`Dockerfile`) and `*.<literal suffix>` (`*.py`) are looked up in dicts;
    the others share one alternation. The first pattern is the smallest index found.
    """

    __slots__ = ("_fold", "_names", "_pieces", "_regex", "_suffixes")

    def __init__(self, ignore_case: bool) -> None:
        self._fold = ignore_case
        self._names: dict[str, int] = {}
        self._suffixes: dict[str, int] = {}
        self._pieces: list[tuple[str, int]] = []
        self._regex: _Alternation | None = None

    def add(self, text: str, segment: str, index: int) -> None:
        key = text.lower() if self._fold else text
        if not _GLOB_CHARS.search(text):
            self._names.setdefault(key, index)
        elif key.startswith("*.") and not _GLOB_CHARS.search(key[1:]):
            self._suffixes.setdefault(key[1:], index)
        else:
            self._pieces.append((segment, index))

    def compile(self) -> None:
        self._regex = _Alternation.build(self._pieces, self._fold)

    def first(self, path: str, best: int | None) -> int | None:
        names, suffixes, alternation = self._names, self._suffixes, self._regex
        if not names and not suffixes and alternation is None:
            return best
        for component in path.split("/"):
            key = component.lower() if self._fold else component
            found = names.get(key)
            dot = key.find(".")
            while dot != -1:
                hit = suffixes.get(key[dot:])
                if hit is not None and (found is None or hit < found):
                    found = hit
                dot = key.find(".", dot + 1)
            if alternation is not None:
                matched = alternation.regex.fullmatch(component)
                if matched is not None and matched.lastindex is not None:
                    hit = alternation.owners[matched.lastindex - 1]
                    found = hit if found is None else min(found, hit)
            if found is not None and (best is None or found < best):
                best = found
        return best


def _translate(alternative: str, original: str) -> tuple[str, str | None]:
    """A brace-free pattern as (regex anchored at the path start, single-component regex)."""
    text = alternative.strip()
    if text.startswith("./"):
        text = "/" + text[2:].lstrip("/")
    if not text or text.startswith("#") or text == "/":
        raise ValueError(f"invalid glob {original!r}: empty pattern")
    if text.startswith("!"):
        raise ValueError(f"invalid glob {original!r}: negation ('!') is not supported")
    try:
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(text)
    except GitIgnorePatternError as exc:
        raise ValueError(f"invalid glob {original!r}") from exc
    if regex is None or include is None:
        raise ValueError(f"invalid glob {original!r}")
    segment = None
    if "/" not in text and regex.startswith(_ANY_DIRS) and regex.endswith(_FILE_OR_DIR):
        segment = regex[len(_ANY_DIRS) : -len(_FILE_OR_DIR)]
    regex = regex.replace(_DIR_MARK, "/")
    if not regex.startswith("^"):
        regex = ".*?" + regex  # pathspec searches its few unanchored regexes
    for piece in (regex, segment):
        try:
            compiled = re.compile(piece or "")
        except re.error as exc:
            raise ValueError(f"invalid glob {original!r}: {exc}") from exc
        if compiled.groups:
            raise ValueError(f"invalid glob {original!r}: unsupported construct")
    return regex, segment


def expand_braces(pattern: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """Every alternative of `{a,b}` groups in `pattern` (nested ones too), in order."""
    out = _expand(pattern, limit)
    if len(out) > limit:
        raise ValueError(f"invalid glob {pattern!r}: more than {limit} brace alternatives")
    return out


def _expand(pattern: str, limit: int) -> list[str]:
    group = _find_group(pattern)
    if group is None:
        return [pattern]
    start, end, commas = group
    prefix, body, suffix = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    bounds = [-1, *(c - start - 1 for c in commas), len(body)]
    tails = _expand(suffix, limit)
    out: list[str] = []
    for left, right in itertools.pairwise(bounds):
        for head in _expand(body[left + 1 : right], limit):
            out.extend(prefix + head + tail for tail in tails)
            if len(out) > limit:
                return out
    return out


def _find_group(pattern: str) -> tuple[int, int, list[int]] | None:
    """The first `{` that has a matching `}` and a top-level comma: (open, close, commas)."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _skip_class(pattern, index)
            continue
        if char == "{":
            found = _match_brace(pattern, index)
            if found is not None and found[1]:
                return index, found[0], found[1]
        index += 1
    return None


def _match_brace(pattern: str, start: int) -> tuple[int, list[int]] | None:
    """The index of the `}` closing the `{` at `start`, and the commas at its top level."""
    depth = 0
    commas: list[int] = []
    index = start
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _skip_class(pattern, index)
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index, commas
        elif char == "," and depth == 1:
            commas.append(index)
        index += 1
    return None


def _skip_class(pattern: str, start: int) -> int:
    """The index just past the character class opening at `start` (or past a literal `[`)."""
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "]":
            return index + 1
        if pattern[index] == "/":
            break
        index += 1
    return start + 1
