"""`{a,b}` brace expansion for globs, bounded for untrusted patterns.

Alternatives are expanded in order (nested, anywhere; `{,x}` gives an empty alternative). A `{`
is a group only when it has a matching `}` and a comma at its top level; other braces are
literal, and `\\` escapes and `[...]` classes hide the braces and commas inside them. The
pattern is parsed in one pass without recursion beyond the group nesting, which is bounded.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

MAX_PATTERN_LENGTH = 1024
MAX_BRACE_DEPTH = 10
MAX_EXPANSIONS = 1024


def pattern_repr(pattern: str) -> str:
    """A pattern for an error message, shortened when long."""
    return repr(pattern if len(pattern) <= 80 else pattern[:77] + "...")


@dataclass(frozen=True, slots=True)
class _Group:
    """A `{a,b}` group: each alternative is a sequence of literal text and nested groups."""

    alternatives: tuple[tuple[str | _Group, ...], ...]


def expand_braces(pattern: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """Every alternative of `{a,b}` groups in `pattern` (nested ones too), in order."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(
            f"invalid glob {pattern_repr(pattern)}: longer than {MAX_PATTERN_LENGTH} characters"
        )
    groups = _brace_groups(pattern)
    parts = _parse(pattern, 0, len(pattern), groups, sorted(groups), 0)
    if _count(parts, limit) > limit:
        raise ValueError(
            f"invalid glob {pattern_repr(pattern)}: more than {limit} brace alternatives"
        )
    return _render(parts)


def _brace_groups(pattern: str) -> dict[int, list[int]]:
    """Each `{` that has a matching `}` and a top-level comma: open -> [commas..., close]."""
    stack: list[list[int]] = []
    groups: dict[int, list[int]] = {}
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
            stack.append([index])
        elif char == "}" and stack:
            opened = stack.pop()
            if len(opened) > 1:
                groups[opened[0]] = [*opened[1:], index]
        elif char == "," and stack:
            stack[-1].append(index)
        index += 1
    return groups


def _parse(
    pattern: str,
    start: int,
    end: int,
    groups: dict[int, list[int]],
    opens: list[int],
    depth: int,
) -> tuple[str | _Group, ...]:
    """`pattern[start:end]` as literal text and groups; nesting is bounded by MAX_BRACE_DEPTH."""
    parts: list[str | _Group] = []
    position = start
    at = bisect.bisect_left(opens, start)
    while at < len(opens) and opens[at] < end:
        opened = opens[at]
        if depth >= MAX_BRACE_DEPTH:
            raise ValueError(
                f"invalid glob {pattern_repr(pattern)}: braces nested deeper than {MAX_BRACE_DEPTH}"
            )
        bounds = [opened, *groups[opened]]
        parts.append(pattern[position:opened])
        alternatives = tuple(
            _parse(pattern, left + 1, right, groups, opens, depth + 1)
            for left, right in itertools.pairwise(bounds)
        )
        parts.append(_Group(alternatives))
        position = bounds[-1] + 1
        at = bisect.bisect_left(opens, position)
    parts.append(pattern[position:end])
    return tuple(parts)


def _count(parts: Sequence[str | _Group], limit: int) -> int:
    """How many strings `parts` expand to, capped just above `limit`."""
    total = 1
    for part in parts:
        if isinstance(part, _Group):
            options = sum(_count(alternative, limit) for alternative in part.alternatives)
            total = min(total * options, limit + 1)
    return total


def _render(parts: Sequence[str | _Group]) -> list[str]:
    """Every expansion of `parts`, the leftmost group varying slowest."""
    out = [""]
    for part in parts:
        if isinstance(part, str):
            out = [text + part for text in out]
        else:
            options = [text for alternative in part.alternatives for text in _render(alternative)]
            out = [text + option for text in out for option in options]
    return out


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
