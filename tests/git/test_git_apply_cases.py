"""Header shapes from Git's own apply tests (t4133, t4135 and friends), read as Git reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.errors import DiffParseError
from reviewflow.git.parse import read_diff
from tests.git.gitapply import git_numstat, our_counts

HUNK = "@@ -1 +1 @@\n-a\n+b\n"
STAMP = "2024-01-01 10:00:00.000000000 +0000"
EPOCH = "1970-01-01 00:00:00.000000000 +0000"


@pytest.mark.parametrize(
    ("text", "strip", "expected"),
    [
        # ---/+++ names differ without rename lines: Git takes the new one
        ("diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/y\n" + HUNK, 1, {"y": (1, 1)}),
        # the old spelling of rename lines
        (
            "diff --git a/o b/n\nsimilarity index 90%\nrename old o\nrename new n\n",
            1,
            {"n": (0, 0)},
        ),
        # `Files X and Y differ` marks a binary file too
        ("diff --git a/f b/f\nindex 1..2 100644\nFiles a/f and b/f differ\n", 1, {"f": None}),
        # GNU diff's quoted names, with a timestamp after them
        (f'--- "a/t\\tb"\t{STAMP}\n+++ "b/t\\tb"\t{STAMP}\n' + HUNK, 1, {"t\tb": (1, 1)}),
        # git appends a TAB to names with spaces: the trailing space stays in the name
        ("--- a/end space \t\n+++ b/end space \t\n" + HUNK, 1, {"end space ": (1, 1)}),
        # `diff -N`: an epoch timestamp marks a created file
        (
            f"--- old/f.c\t{EPOCH}\n+++ new/f.c\t{STAMP}\n@@ -0,0 +1,2 @@\n+a\n+b\n",
            1,
            {"f.c": (2, 0)},
        ),
        # a backup name: Git prefers the shorter name (`f.c` over `f.c.orig`, `f.c~`)
        ("--- f.c.orig\n+++ f.c\n" + HUNK, 0, {"f.c": (1, 1)}),
        ("--- f.c\n+++ f.c~\n" + HUNK, 0, {"f.c": (1, 1)}),
        # whitespace damage (t4135): the TAB before the timestamp became spaces
        (f"--- a/p.txt   {STAMP}\n+++ b/p.txt   {STAMP}\n" + HUNK, 1, {"p.txt": (1, 1)}),
        # a name with spaces and a TAB, cut only at the timestamp
        (f"--- a/x y\tz\t{STAMP}\n+++ b/x y\tz\t{STAMP}\n" + HUNK, 1, {"x y\tz": (1, 1)}),
        # doubled slashes are squashed as Git does
        (
            "diff --git a/d//f b/d//f\nindex 1..2 100644\n--- a/d//f\n+++ b/d//f\n" + HUNK,
            1,
            {"d/f": (1, 1)},
        ),
    ],
)
def test_header_shapes_read_as_git_reads_them(
    tmp_path: Path, text: str, strip: int, expected: dict[str, tuple[int, int] | None]
) -> None:
    parsed = read_diff(text.encode())
    assert (parsed.strip, our_counts(parsed.files)) == (strip, expected)
    assert git_numstat(text.encode(), strip, tmp_path) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "diff --git a/f b/f\nnew file mode 100644\n--- a/f\n+++ b/f\n" + HUNK,
            "expected /dev/null",
        ),
        ("diff --git a/x b/y\nrename from x\nrename to y\n--- a/z\n+++ b/y\n" + HUNK, "disagrees"),
        ("diff --git a/f b/f\nnew file mode 100644\ndeleted file mode 100644\n", "inconsistent"),
        ("diff --git a/f b/f\nold mode 10x644\nnew mode 100755\n", "invalid file mode"),
        ("--- /dev/null\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n", "a new file with lines of an old one"),
        ("--- a/f\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", "a deleted file that still has lines"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1 @@\n-a\n+b\n b\n", "more lines than"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n b\n", "without an added or removed line"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ x\n+b\n", "bad '\\\\ No newline"),
    ],
)
def test_what_git_refuses_we_refuse(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DiffParseError, match=message):
        read_diff(text)
    assert git_numstat(text.encode(), 0, tmp_path) is None
    assert git_numstat(text.encode(), 1, tmp_path) is None
