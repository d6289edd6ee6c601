"""Glob semantics: case, `**`, `*`, `?`, classes, braces, basename patterns, first match."""

from __future__ import annotations

import pickle
import random
import re
import time

import pytest
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from reviewflow.globs.match import GlobSet, expand_braces


def matches(pattern: str, path: str) -> bool:
    return GlobSet([pattern]).match(path) == pattern


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # case-insensitive
        ("*.py", "src/APP.PY", True),
        ("Dockerfile", "deploy/DOCKERFILE", True),
        ("SRC/**", "src/a/b.c", True),
        # basename patterns match at any depth
        ("*.py", "a.py", True),
        ("*.py", "a/b/c/d.py", True),
        ("Makefile", "tools/build/Makefile", True),
        ("Makefile", "tools/Makefile.inc", False),
        # a pattern with a slash is anchored at the root
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "lib/src/a.py", False),
        ("src/*.py", "src/sub/a.py", False),
        ("/top.md", "top.md", True),
        ("/top.md", "docs/top.md", False),
        ("./top.md", "top.md", True),
        ("./top.md", "docs/top.md", False),
        # ** spans any number of directories, also none
        ("**", "anything/at/all.txt", True),
        ("**/*.go", "main.go", True),
        ("**/*.go", "a/b/c/main.go", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/x/a.py", False),
        ("**/vendor/**", "vendor/x.go", True),
        ("**/vendor/**", "a/vendor/b/x.go", True),
        ("**/vendor/**", "a/vendors/x.go", False),
        # * and ? never cross a slash
        ("src/*", "src/a/b.py", True),  # src/a is a directory: everything beneath matches
        ("src/*.py", "src/a/b.py", False),
        ("a?c.txt", "abc.txt", True),
        ("a?c.txt", "ac.txt", False),
        ("a?c.txt", "a/c.txt", False),
        # character classes
        ("file[0-9].txt", "file7.txt", True),
        ("file[0-9].txt", "filex.txt", False),
        ("x[abc]y", "xBy", True),
        ("x[!a]y", "xby", True),
        ("x[!a]y", "xay", False),
        ("x[!a]y", "xAy", False),
        # braces, nested, inside directories, empty alternative
        ("*.{py,pyi}", "a/b.pyi", True),
        ("*.{py,pyi}", "a/b.pyx", False),
        ("lib/{core,util}/*.{c,h}", "lib/util/x.h", True),
        ("lib/{core,util}/*.{c,h}", "lib/other/x.h", False),
        ("{src,lib/{a,b}}/**/*.rs", "lib/b/x/y.rs", True),
        ("{src,lib/{a,b}}/**/*.rs", "lib/c/y.rs", False),
        ("app{,.min}.js", "app.js", True),
        ("app{,.min}.js", "app.min.js", True),
        # literal braces: no comma, or escaped
        ("{a}.txt", "{a}.txt", True),
        ("\\{a,b}.txt", "{a,b}.txt", True),
        ("\\{a,b}.txt", "a.txt", False),
        # a named directory matches everything beneath it (gitignore semantics)
        ("vendor", "x/vendor/lib.go", True),
        ("vendor/", "vendor/lib.go", True),
        ("docs/", "docs", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def test_first_matching_pattern_is_returned() -> None:
    globs = GlobSet(["src/legacy/**", "*.py", "src/**", "**"])
    assert globs.match("src/legacy/a.py") == "src/legacy/**"
    assert globs.match("src/new/a.py") == "*.py"
    assert globs.match("src/new/a.c") == "src/**"
    assert globs.match("README") == "**"
    assert globs.match_index("src/new/a.c") == 2
    assert globs.patterns == ("src/legacy/**", "*.py", "src/**", "**")


def test_first_match_across_brace_alternatives_keeps_pattern_order() -> None:
    globs = GlobSet(["{docs,src}/*.md", "src/{a,b}.md"])
    assert globs.match("src/a.md") == "{docs,src}/*.md"
    assert globs.match("DOCS/x.MD") == "{docs,src}/*.md"


def test_case_sensitive_option() -> None:
    assert GlobSet(["*.PY"], ignore_case=False).match("a.py") is None
    assert GlobSet(["*.PY"], ignore_case=False).match("a.PY") == "*.PY"


def test_empty_set_matches_nothing() -> None:
    globs = GlobSet([])
    assert globs.match("a.py") is None
    assert not globs
    assert len(globs) == 0


@pytest.mark.parametrize("pattern", ["", "   ", "!*.py", "#comment", "/", "[z-a].py", "x\\"])
def test_invalid_patterns_raise_value_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="invalid glob"):
        GlobSet([pattern])


def test_a_single_string_is_refused() -> None:
    with pytest.raises(TypeError):
        GlobSet("*.py")


def test_expand_braces() -> None:
    assert expand_braces("src/{a,b}/*.{py,pyi}") == [
        "src/a/*.py",
        "src/a/*.pyi",
        "src/b/*.py",
        "src/b/*.pyi",
    ]
    assert expand_braces("{a,b{c,d}}x") == ["ax", "bcx", "bdx"]
    assert expand_braces("{a{b,c}}") == ["{ab}", "{ac}"]
    assert expand_braces("x{") == ["x{"]
    assert expand_braces("[{,]}") == ["[{,]}"]  # braces inside a character class are literal


def test_brace_explosion_is_bounded() -> None:
    with pytest.raises(ValueError, match="brace alternatives"):
        GlobSet(["{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}"])


def test_globset_pickles_and_compares() -> None:
    globs = GlobSet(["*.py", "src/**"])
    clone = pickle.loads(pickle.dumps(globs))
    assert clone == globs
    assert clone.match("src/x.c") == "src/**"
    assert hash(clone) == hash(globs)


def test_matching_thousands_of_paths_is_cheap() -> None:
    patterns = [f"pkg{i}/**/*.{{py,pyi}}" for i in range(50)] + ["*.md", "**"]
    globs = GlobSet(patterns)
    paths = [f"pkg{i % 60}/sub{i % 7}/mod{i}.py" for i in range(10_000)]
    start = time.perf_counter()
    found = [globs.match(path) for path in paths]
    elapsed = time.perf_counter() - start
    assert found[0] == "pkg0/**/*.{py,pyi}"
    assert found[55] == "**"
    assert elapsed < 2.0, elapsed


def _reference_match(patterns: list[str], path: str) -> int | None:
    """The first matching pattern, the slow way: one pathspec regex per alternative."""
    for index, pattern in enumerate(patterns):
        for alternative in expand_braces(pattern):
            text = alternative.strip()
            if text.startswith("./"):
                text = "/" + text[2:]
            regex, _ = GitIgnoreSpecPattern.pattern_to_regex(text)
            assert regex is not None
            if re.search(regex, path, re.IGNORECASE | re.DOTALL):
                return index
    return None


def test_fast_paths_agree_with_plain_pathspec_matching() -> None:
    pool = [
        "*.py",
        "*.P?",
        "*.tar.gz",
        "Dockerfile",
        "Docker*",
        "*file",
        "src/**",
        "**/test_*.py",
        "/root.txt",
        "*.{js,ts}",
        "lib/*/x.c",
        "vendor/",
        "a?c",
        "[ab]*.md",
        "*",
        "**",
        "Makefile",
        ".github/workflows/*.yml",
        "docs",
        "*.",
        "x.y.z",
        "README*",
    ]
    names = [
        "a.py",
        "A.PY",
        "b.pyc",
        "x.pz",
        "t.tar.gz",
        "T.TAR.GZ",
        "dockerfile",
        "Dockerfile.dev",
        "makefile",
        "abc",
        "aBc",
        "a.md",
        "b.MD",
        "c.md",
        "root.txt",
        "x.js",
        "y.TS",
        "test_a.py",
        "x.c",
        "weird.",
        "x.y.z",
        "README",
        "readme.rst",
        ".py",
        "file",
        "Gemfile",
    ]
    dirs = ["", "src/", "lib/q/", "vendor/", "a/vendor/", "docs/", ".github/workflows/", "a.py/"]
    rng = random.Random(1234)
    for _ in range(120):
        patterns = rng.sample(pool, rng.randint(1, 8))
        globs = GlobSet(patterns)
        for directory in dirs:
            for name in names:
                path = directory + name
                assert globs.match_index(path) == _reference_match(patterns, path), (
                    patterns,
                    path,
                )


def test_order_between_fast_and_regex_patterns() -> None:
    assert GlobSet(["*.p?", "*.py"]).match("a.py") == "*.p?"
    assert GlobSet(["*.py", "*.p?"]).match("a.py") == "*.py"
    assert GlobSet(["src/**", "Dockerfile"]).match("src/Dockerfile") == "src/**"
    assert GlobSet(["Dockerfile", "src/**"]).match("src/Dockerfile") == "Dockerfile"


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # a slash-free pattern matches the basename only, never a directory name
        ("*.js", "packages/chart.js/src/main.py", False),
        ("*.js", "packages/chart.js/src/main.js", True),
        ("*.go", "com.acme.go/src/Main.java", False),
        ("vendor", "vendor/lib.go", False),
        ("vendor", "a/vendor", True),
        ("Dockerfile*", "Dockerfile.d/x.conf", False),
        ("[ab]*.md", "a.md/x.txt", False),
        # an anchored pattern must match the whole path
        ("src/*", "src/a.py", True),
        ("src/*", "src/a/b.py", False),
        ("src/*.py", "src/a.py/b.txt", False),
        ("**/gen/*.py", "x/gen/a.py", True),
        ("**/gen/*.py", "x/gen/a.py/b", False),
        ("src/**/*.py", "src/a/b.py", True),
        ("a/**/b", "a/x/b/c.txt", False),
        # `/**` and a trailing `/` explicitly reach beneath a directory
        ("src/**", "src/a/b.py", True),
        ("vendor/", "x/vendor/lib/a.go", True),
        ("docs/", "docs", False),
        ("**", "a/b.c", True),
        ("*", "a/b.c", True),
    ],
)
def test_file_mode_semantics(pattern: str, path: str, expected: bool) -> None:
    assert (GlobSet([pattern], directories=False).match(path) == pattern) is expected


def test_directory_mode_still_matches_beneath_named_directories() -> None:
    assert GlobSet(["*.js"]).match("packages/chart.js/src/main.py") == "*.js"
    assert GlobSet(["vendor"]).match("a/vendor/lib/x.go") == "vendor"
    assert GlobSet(["src/*"]).match("src/a/b.py") == "src/*"
    assert GlobSet(["*.js"]).directories and not GlobSet([], directories=False).directories


def test_file_mode_first_match_across_keyed_and_other_patterns() -> None:
    globs = GlobSet(
        ["docs/**/*.md", "**/gen/*.py", "src/**", "*.py", "**/x/README", "**"], directories=False
    )
    assert globs.match("docs/a/b.MD") == "docs/**/*.md"
    assert globs.match("a/gen/m.py") == "**/gen/*.py"
    assert globs.match("src/gen/m.py") == "**/gen/*.py"
    assert globs.match("src/m.py") == "src/**"
    assert globs.match("lib/m.py") == "*.py"
    assert globs.match("lib/x/readme") == "**/x/README"
    assert globs.match("lib/x/readme.md") == "**"


def test_modes_compare_unequal() -> None:
    assert GlobSet(["*.py"]) != GlobSet(["*.py"], directories=False)
    assert GlobSet(["*.py"], directories=False) == GlobSet(["*.py"], directories=False)
    assert "directories=False" in repr(GlobSet(["*.py"], directories=False))


def test_character_classes_never_match_a_slash() -> None:
    # pathspec's regex for `src/x[!a]y` matched `src/x/y`: a negated class crossed the slash
    assert GlobSet(["src/x[!a]y"]).match("src/x/y") is None
    assert GlobSet(["src/x[!a]y"]).match("src/xby") == "src/x[!a]y"
    assert GlobSet(["src/a[.-0]b"]).match("src/a/b") is None  # the range `.-0` holds `/`
    assert GlobSet(["src/a[.-0]b"]).match("src/a.b") == "src/a[.-0]b"
