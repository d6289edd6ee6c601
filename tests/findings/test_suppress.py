"""`reviewflow: ignore` comments: each language's comment syntax, lines, categories, files."""

from __future__ import annotations

import pytest

from reviewflow.findings.comments import comment_openers
from reviewflow.findings.models import Finding, PlacedBy
from reviewflow.findings.suppress import (
    FILE_HEADER_LINES,
    Suppression,
    find_suppressions,
    suppression_for,
)
from reviewflow.models import Category, Severity


def finding(path: str, start: int, end: int | None = None, category: str = "security") -> Finding:
    return Finding(
        id="F000000000001",
        fingerprint="0" * 63 + "1",
        severity=Severity.HIGH,
        category=Category(category),
        path=path,
        start_line=start,
        end_line=end or start,
        title="t",
        problem="p",
        confidence=0.9,
        existing_code="x",
        placed_by=PlacedBy.EXACT,
    )


def only(path: str, text: str, added: tuple[int, ...] = ()) -> Suppression:
    found, warnings = find_suppressions(path, text, frozenset(added))
    assert not warnings
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("app/views.py", 'key = "abc"  # reviewflow: ignore[security] test fixture\n'),
        ("web/app.js", 'const key = "abc"; // reviewflow: ignore[security] test fixture\n'),
        ("web/app.tsx", 'const key = "abc"; /* reviewflow: ignore[security] test fixture */\n'),
        ("cmd/main.go", 'key := "abc" // reviewflow: ignore[security] test fixture\n'),
        ("db/001.sql", "SELECT 'abc'; -- reviewflow: ignore[security] test fixture\n"),
        ("db/002.sql", "SELECT 'abc'; /* reviewflow: ignore[security] test fixture */\n"),
        ("deploy/values.yaml", "key: abc  # reviewflow: ignore[security] test fixture\n"),
        (".github/workflows/ci.yml", "key: abc  # reviewflow: ignore[security] test fixture\n"),
        ("docs/page.html", "<b>abc</b> <!-- reviewflow: ignore[security] test fixture -->\n"),
        ("infra/main.tf", 'key = "abc" # reviewflow: ignore[security] test fixture\n'),
        ("scripts/run.lua", 'local key = "abc" -- reviewflow: ignore[security] test fixture\n'),
        ("src/core.clj", '(def key "abc") ; reviewflow: ignore[security] test fixture\n'),
        ("src/mod.erl", 'Key = "abc". % reviewflow: ignore[security] test fixture\n'),
        ("Dockerfile", "ENV KEY=abc # reviewflow: ignore[security] test fixture\n"),
    ],
)
def test_every_language_comment_syntax(path: str, text: str) -> None:
    found = only(path, text, added=(1,))
    assert (found.line, found.whole_file, found.added) == (1, False, True)
    assert found.categories == {Category.SECURITY}
    assert found.reason == "test fixture"
    assert found.comment == "reviewflow: ignore[security]"
    assert suppression_for(finding(path, 1), [found]) == found


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("app/views.py", "key = 1  // reviewflow: ignore\n"),  # not a Python comment
        ("cmd/main.go", "key := 1 # reviewflow: ignore\n"),  # not a Go comment
        ("db/001.sql", "SELECT 1; // reviewflow: ignore\n"),
        ("deploy/values.yaml", "key: 1  -- reviewflow: ignore\n"),
        ("web/app.js", 'log("reviewflow: ignore")\n'),  # in a string, not after a comment opener
        ("app/views.py", "# reviewflow: ignored the rest\n"),  # not the directive
        ("app/views.py", "# reviewflow: ignore-files\n"),
    ],
)
def test_other_syntaxes_and_near_misses_do_not_count(path: str, text: str) -> None:
    assert find_suppressions(path, text, frozenset()) == ([], [])


def test_the_line_of_a_finding_or_the_line_above_it() -> None:
    text = "a = 1\n# reviewflow: ignore\nb = eval(x)\nc = 2\n\nd = 3\n"
    found = only("m.py", text)
    assert found.line == 2 and not found.added and found.reason == ""
    assert suppression_for(finding("m.py", 3), [found]) is found  # the line above
    assert suppression_for(finding("m.py", 2), [found]) is found  # its own line
    assert suppression_for(finding("m.py", 1, 4), [found]) is found  # inside the range
    assert suppression_for(finding("m.py", 4), [found]) is None  # two lines below
    assert suppression_for(finding("m.py", 6), [found]) is None
    assert suppression_for(finding("other.py", 3), [found]) is None


def test_categories_narrow_it_and_aliases_count() -> None:
    found = only("m.go", "// reviewflow: ignore[perf, vuln] measured: fine\nx()\n")
    assert found.categories == {Category.PERFORMANCE, Category.SECURITY}
    assert found.reason == "measured: fine"
    assert suppression_for(finding("m.go", 2, category="security"), [found]) is found
    assert suppression_for(finding("m.go", 2, category="correctness"), [found]) is None


def test_an_unknown_category_is_a_warning_and_silences_nothing() -> None:
    found, warnings = find_suppressions("m.py", "x = 1  # reviewflow: ignore[secrity]\n", {1})
    assert found == []
    assert [(w.code, w.path) for w in warnings] == [("suppression_ignored", "m.py")]
    assert "unknown categories 'secrity'" in warnings[0].message
    assert warnings[0].message.startswith("line 1: ")
    mixed, notes = find_suppressions("m.py", "# reviewflow: ignore[tests, nope]\n", set())
    assert mixed[0].categories == {Category.TESTS} and len(notes) == 1


def test_ignore_file_near_the_top_silences_the_file() -> None:
    text = "-- generated by the migration tool\n-- reviewflow: ignore-file[performance]\n"
    found = only("db/003.sql", text + "SELECT 1;\n" * 50)
    assert found.whole_file and found.comment == "reviewflow: ignore-file[performance]"
    assert suppression_for(finding("db/003.sql", 40, category="performance"), [found]) is found
    assert suppression_for(finding("db/003.sql", 40, category="security"), [found]) is None


def test_ignore_file_further_down_is_a_warning() -> None:
    text = "x = 1\n" * FILE_HEADER_LINES + "# reviewflow: ignore-file\n"
    found, warnings = find_suppressions("late.py", text, set())
    assert found == []
    assert warnings[0].message == (
        f"line {FILE_HEADER_LINES + 1}: `reviewflow: ignore-file` is honoured only in the first "
        f"{FILE_HEADER_LINES} lines: it silences nothing"
    )


def test_one_there_before_the_change_wins_over_one_it_adds() -> None:
    text = "# reviewflow: ignore\nx = eval(y)  # reviewflow: ignore\n"
    found, _ = find_suppressions("m.py", text, {2})
    assert [(s.line, s.added) for s in found] == [(1, False), (2, True)]
    assert suppression_for(finding("m.py", 2), found) == found[0]


def test_languages_come_from_the_built_in_rules_then_extensions() -> None:
    assert comment_openers("src/app.py") == ("#",)
    assert comment_openers("Jenkinsfile") == ("//", "/*")
    assert comment_openers("k8s/deploy.yaml") == ("#",)  # the kubernetes target rule
    assert comment_openers("config/settings.yaml") == ("#",)  # general: by extension
    assert comment_openers("Makefile") == ("#",)
    assert "--" in comment_openers("notes.unknown")  # unknown: every common marker


def test_lines_are_numbered_as_git_numbers_them() -> None:
    text = "a = '\x0c'\r\nb = 1  # reviewflow: ignore  windows line end\r\n"
    found = only("crlf.py", text)
    assert (found.line, found.reason) == (2, "windows line end")


@pytest.mark.parametrize(
    ("path", "trailing", "alone"),
    [
        ("app/views.py", 'key = "k"  # reviewflow: ignore', "# reviewflow: ignore"),
        ("web/app.js", 'key = "k"; // reviewflow: ignore', "// reviewflow: ignore"),
        ("web/app.ts", 'key = "k"; /* reviewflow: ignore */', "/* reviewflow: ignore */"),
        ("db/001.sql", "SELECT 'k'; -- reviewflow: ignore", "-- reviewflow: ignore"),
        ("db/002.sql", "SELECT 'k'; /* reviewflow: ignore */", "  /* reviewflow: ignore */"),
        ("docs/page.html", "<b>k</b> <!-- reviewflow: ignore -->", "<!-- reviewflow: ignore -->"),
        ("src/core.clj", '(def k "k") ; reviewflow: ignore', "; reviewflow: ignore"),
        ("src/mod.erl", 'K = "k". % reviewflow: ignore', "% reviewflow: ignore"),
    ],
)
def test_a_trailing_comment_covers_its_line_and_one_alone_the_next(
    path: str, trailing: str, alone: str
) -> None:
    code = "x = 1"
    at_end = only(path, f"{code}\n{trailing}\n{code}\n")
    assert not at_end.alone
    assert suppression_for(finding(path, 2), [at_end]) is at_end
    assert suppression_for(finding(path, 3), [at_end]) is None  # not the line below
    assert suppression_for(finding(path, 1, 3), [at_end]) is at_end  # inside the range
    by_itself = only(path, f"{code}\n{alone}\n{code}\n\n{code}\n")
    assert by_itself.alone
    assert suppression_for(finding(path, 3), [by_itself]) is by_itself  # the next line
    assert suppression_for(finding(path, 2), [by_itself]) is by_itself
    assert suppression_for(finding(path, 1), [by_itself]) is None
    assert suppression_for(finding(path, 4), [by_itself]) is None
    assert suppression_for(finding(path, 5), [by_itself]) is None


def test_a_rejected_comment_does_not_borrow_the_one_above() -> None:
    text = (
        "import os\n\n\n"
        'TOKEN = "t0k"  # reviewflow: ignore[security] test fixture\n'
        'PASS = "p4ss"  # reviewflow: ignore[bogus]\n'
    )
    found, warnings = find_suppressions("settings.py", text, frozenset())
    assert [w.message.split(":")[0] for w in warnings] == ["line 5"]
    assert suppression_for(finding("settings.py", 4), found) == found[0]
    assert suppression_for(finding("settings.py", 5), found) is None


def test_an_alone_comment_covers_the_next_line_even_when_it_is_blank() -> None:
    found = only("m.py", "# reviewflow: ignore\n\nx = eval(y)\n")
    assert suppression_for(finding("m.py", 3), [found]) is None
