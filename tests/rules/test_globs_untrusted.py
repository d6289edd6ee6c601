"""Globs from untrusted repositories: no catastrophic backtracking, bounded patterns, and the
same answers as the reference semantics (pathspec's gitignore regexes plus brace expansion)."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from reviewflow.globs.match import (
    MAX_BRACE_DEPTH,
    MAX_EXPANSIONS,
    MAX_PATTERN_LENGTH,
    GlobSet,
    expand_braces,
)

STARS = "a*" * 11 + "b"  # `a*a*...*b`: the regexes pathspec builds backtrack exponentially on it


@pytest.mark.parametrize("directories", [True, False])
@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (f"src/{STARS}", "src/" + "a" * 60 + ".py", False),
        (f"src/{STARS}", "src/" + "a" * 60 + "b", True),
        (f"src/{STARS}", "src/" + "a" * 5000, False),
        (STARS, "x/" + "a" * 5000, False),
        (STARS, "x/y/" + "ab" * 3000, True),
        (f"**/{STARS}/**/c", "/".join(["a" * 200] * 30), False),
        (f"**/{STARS}/**/c", "/".join(["a" * 200] * 30) + "b/x/c", True),
        ("/".join(["**/a"] * 100) + "/b", "/".join(["a"] * 300), False),
        ("/".join(["**/a"] * 100) + "/b", "/".join(["a"] * 300) + "/b", True),
        ("/".join(["**/a*a*a*a"] * 50) + "/b", "/".join(["a" * 50] * 100), False),
        ("*" + "?" * 200 + "*b", "a" * 3000, False),
        ("*" + "?" * 200 + "*b", "a" * 3000 + "b", True),
        ("**/" + "/".join(["*"] * 200) + "/b", "/".join(["a"] * 400), False),
        ("*" + "[ab]*" * 40 + "c", "x/" + "ab" * 2000, False),
    ],
)
def test_pathological_patterns_finish_with_the_right_answer(
    pattern: str, path: str, expected: bool, directories: bool
) -> None:
    assert (GlobSet([pattern], directories=directories).match(path) is not None) is expected


def test_pathological_pattern_in_a_set_among_others() -> None:
    globs = GlobSet(["*.md", f"src/{STARS}", f"**/{STARS}", "src/**"])
    assert globs.match("src/" + "a" * 60 + ".py") == "src/**"
    assert globs.match("lib/" + "a" * 60 + ".py") is None


def test_pattern_length_is_bounded() -> None:
    GlobSet(["a" * MAX_PATTERN_LENGTH])
    with pytest.raises(ValueError, match=f"invalid glob .*longer than {MAX_PATTERN_LENGTH}"):
        GlobSet(["a" * (MAX_PATTERN_LENGTH + 1)])
    with pytest.raises(ValueError, match="invalid glob"):
        GlobSet(["{a," * 1500 + "b" + "}" * 1500])  # once a RecursionError


def test_brace_nesting_is_bounded() -> None:
    def nested(depth: int) -> str:
        return "{a," * depth + "b" + "}" * depth

    assert len(expand_braces(nested(MAX_BRACE_DEPTH))) == MAX_BRACE_DEPTH + 1
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_BRACE_DEPTH}"):
        GlobSet([nested(MAX_BRACE_DEPTH + 1)])
    # braces without a top-level comma are literal, however deep
    literal = "{" * 400 + "a,b" + "}" * 400
    assert expand_braces(literal) == ["{" * 399 + "a" + "}" * 399, "{" * 399 + "b" + "}" * 399]


def test_brace_expansions_are_bounded_without_building_them() -> None:
    with pytest.raises(ValueError, match=f"more than {MAX_EXPANSIONS} brace alternatives"):
        expand_braces("{a,b}" * 200)
    assert len(expand_braces("{a,b}" * 10)) == MAX_EXPANSIONS


def test_long_patterns_are_shortened_in_messages() -> None:
    with pytest.raises(ValueError) as info:
        GlobSet(["!" + "a" * 500])
    assert len(str(info.value)) < 200


# --- differential test against the reference semantics ------------------------------------------


def _ref_expand(pattern: str) -> list[str]:
    """The brace expansion reviewflow had before its rewrite (recursive, quadratic)."""
    group = _ref_group(pattern)
    if group is None:
        return [pattern]
    start, end, commas = group
    prefix, body, suffix = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
    bounds = [-1, *(c - start - 1 for c in commas), len(body)]
    tails = _ref_expand(suffix)
    return [
        prefix + head + tail
        for left, right in itertools.pairwise(bounds)
        for head in _ref_expand(body[left + 1 : right])
        for tail in tails
    ]


def _ref_group(pattern: str) -> tuple[int, int, list[int]] | None:
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char in "\\[":
            index = index + 2 if char == "\\" else _ref_skip_class(pattern, index)
            continue
        if char == "{":
            depth, commas, scan = 0, [], index
            while scan < len(pattern):
                if pattern[scan] in "\\[":
                    scan = scan + 2 if pattern[scan] == "\\" else _ref_skip_class(pattern, scan)
                    continue
                depth += {"{": 1, "}": -1}.get(pattern[scan], 0)
                if pattern[scan] == "," and depth == 1:
                    commas.append(scan)
                if depth == 0:
                    break
                scan += 1
            if depth == 0 and commas:
                return index, scan, commas
        index += 1
    return None


def _ref_skip_class(pattern: str, start: int) -> int:
    index = start + 1 + (pattern[start + 1 : start + 2] in ("!", "^"))
    index += pattern[index : index + 1] == "]"
    while index < len(pattern) and pattern[index] != "/":
        if pattern[index] == "]":
            return index + 1
        index += 2 if pattern[index] == "\\" else 1
    return start + 1


_Compiled = list[tuple[re.Pattern[str], bool]]


def _ref_compile(pattern: str) -> _Compiled:
    """pathspec's regex for each alternative, and whether it is a `dir/` pattern."""
    out = []
    for alternative in _ref_expand(pattern):
        text = alternative.strip()
        if text.startswith("./"):
            text = "/" + text[2:].lstrip("/")
        if not text or text.startswith(("#", "!")) or text == "/":
            raise ValueError(text)
        try:
            regex, _ = GitIgnoreSpecPattern.pattern_to_regex(text)
        except GitIgnorePatternError as exc:
            raise ValueError(text) from exc
        if regex is None:
            raise ValueError(text)
        # A deliberate difference: pathspec lets a negated class match `/` in anchored patterns.
        regex = regex.replace("[^a]", "(?!/)[^a]")
        try:
            out.append((re.compile(regex, re.IGNORECASE | re.DOTALL), text.endswith("/")))
        except re.error as exc:
            raise ValueError(text) from exc
    return out


def _ref_first(compiled: list[_Compiled], path: str, dirs: bool) -> int | None:
    """The first matching pattern. In file mode a match that stops at a directory (pathspec's
    `ps_d` group) counts only for a `dir/` pattern, which names the directory's contents."""
    for index, alternatives in enumerate(compiled):
        for regex, is_dir in alternatives:
            found = regex.search(path)
            if found and (dirs or is_dir or found.groupdict().get("ps_d") is None):
                return index
    return None


TOKENS = [
    *("a", "b", "A", ".", "*", "?", "**", "[ab]", "[!a]", "[", "/", "/", "./"),
    *("{a,b}", "{,a}", "{a,*/b}", "{", "}", ",", "\\*", "*.a", ".b", "a.b"),
]


def _random_pattern(rng: random.Random) -> str:
    return "".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 7)))


def _random_path(rng: random.Random) -> str:
    parts = ("".join(rng.choice("aAb.*{") for _ in range(rng.randint(1, 4))) for _ in range(4))
    return "/".join(itertools.islice(parts, rng.randint(1, 4)))


# 2,500 random pattern sets a mode, in five parts of 500 with seeds of their own: the first in
# `make test`, the other four in the stress matrix (`make test-stress`).
PARTS = [0, *(pytest.param(part, marks=pytest.mark.stress) for part in range(1, 5))]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # `[[` in a class: "possible nested set"
@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("directories", [True, False])
def test_random_patterns_agree_with_the_reference(directories: bool, part: int) -> None:
    rng = random.Random(20240611 + directories + 2 * part)
    checked = 0
    for _ in range(500):
        patterns = [_random_pattern(rng) for _ in range(rng.randint(1, 4))]
        try:
            reference = [_ref_compile(pattern) for pattern in patterns]
        except ValueError:
            with pytest.raises(ValueError, match="invalid glob"):
                GlobSet(patterns, directories=directories)
            continue
        globs = GlobSet(patterns, directories=directories)
        for _ in range(12):
            path = _random_path(rng)
            expected = _ref_first(reference, path, directories)
            assert globs.match_index(path) == expected, (patterns, path, directories)
            checked += 1
    assert checked > 2_000


def test_random_brace_patterns_expand_like_the_reference() -> None:
    rng = random.Random(7)
    tokens = ["a", "b", "{", "}", ",", "\\", "[", "]", "!", "/", "{a,b}", "{,}", "\\{", "\\,"]
    for _ in range(20_000):
        pattern = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 12)))
        assert expand_braces(pattern) == _ref_expand(pattern), pattern
