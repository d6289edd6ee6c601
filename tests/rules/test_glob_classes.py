"""Character classes as git's wildmatch reads them, `x/**/`, and the size of a pattern set."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from reviewflow.errors import RulesError
from reviewflow.globs.match import MAX_SET_ALTERNATIVES, GlobSet
from reviewflow.rules.loader import load_rules


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("[a\\-z]x", ["ax", "-x", "zx"], ["_x", "]x", "^x", "\\x", "bx"]),
        ("[\\]]x", ["]x"], ["\\x", "x"]),
        ("[]]x", ["]x"], ["x", "ax"]),
        ("[]a]x", ["]x", "ax"], ["bx"]),
        ("[!a]y", ["by", "-y"], ["ay", "Ay"]),
        ("[^a]y", ["by"], ["ay"]),
        ("[a-c]z", ["bz", "Bz"], ["dz"]),
        ("[[:digit:]]x", ["5x"], ["ax"]),
        ("[[:alpha:]]x", ["ax", "Bx"], ["5x", "-x"]),
        ("[[:upper:][:digit:]]x", ["Ax", "5x"], ["-x"]),
        ("[[:punct:]]x", ["!x", "]x", "\\x", "-x"], ["ax", "5x"]),
        ("[[:space:]]x", [" x", "\tx"], ["ax"]),
    ],
)
def test_character_classes(pattern: str, matches: list[str], misses: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Possible nested set" FutureWarning from `re`
        globs = GlobSet([pattern])
    for path in matches:
        assert globs.match(path) == pattern, path
    for path in misses:
        assert globs.match(path) is None, path


def test_classes_never_match_a_slash() -> None:
    assert GlobSet(["a[[:punct:]]b"]).match("a/b") is None
    assert GlobSet(["a[!x]b"]).match("a/b") is None


@pytest.mark.parametrize("pattern", ["[[:nope:]]x", "[z-a]x", "[abc", "[a\\"])
def test_bad_classes(pattern: str) -> None:
    with pytest.raises(ValueError, match="invalid glob"):
        GlobSet([pattern])


@pytest.mark.parametrize("directories", [True, False])
def test_trailing_double_star_slash_needs_a_directory(directories: bool) -> None:
    for pattern in ("docs/**/", "**/docs/**/"):
        globs = GlobSet([pattern], directories=directories)
        assert globs.match("docs/readme.md") is None
        assert globs.match("docs/api/x.md") == pattern
        assert globs.match("docs/api/v1/y.md") == pattern


def test_a_pattern_set_is_bounded() -> None:
    half = "{a,b}" * 8  # 256 alternatives
    GlobSet([f"x/{half}*", f"y/{half}*"])
    with pytest.raises(ValueError, match=f"more than {MAX_SET_ALTERNATIVES} alternatives"):
        GlobSet([f"x/{half}*", f"y/{half}*", "z"])


def test_an_oversized_rules_file_is_a_rules_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".reviewflow").mkdir(parents=True)
    patterns = [f"**/d{i}/" + "{a,b}" * 9 + "*x" for i in range(20)]
    (repo / ".reviewflow" / "rules.json").write_text(json.dumps({"exclude": patterns}))
    with pytest.raises(RulesError, match="alternatives"):
        load_rules(repo, tmp_path / "home")
