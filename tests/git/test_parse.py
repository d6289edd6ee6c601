"""The unified-diff parser on literal inputs (git output, plain `diff -u`, malformed)."""

from __future__ import annotations

import re

import pytest

from reviewflow.errors import DiffParseError
from reviewflow.git.models import FileStatus
from reviewflow.git.parse import iter_lines, parse_lines, parse_unified_diff
from reviewflow.git.quoting import unquote
from tests.git.conftest import by_path, texts

PLAIN = b"""\
--- old/src/app.py\t2024-01-01 10:00:00.000000000 +0000
+++ new/src/app.py\t2024-01-02 10:00:00.000000000 +0000
@@ -1,3 +1,3 @@ def main():
 one
-two
+TWO
 three
"""


def test_plain_diff_u_strips_first_component_and_timestamp() -> None:
    (diff,) = parse_unified_diff(PLAIN)
    assert (diff.path, diff.status) == ("src/app.py", FileStatus.MODIFIED)
    (hunk,) = diff.hunks
    assert (hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count) == (1, 3, 1, 3)
    assert hunk.section == "def main():"
    assert [(ln.kind, ln.old_no, ln.new_no) for ln in hunk.lines] == [
        ("context", 1, 1),
        ("del", 2, None),
        ("add", None, 2),
        ("context", 3, 3),
    ]
    assert diff.changed_lines == frozenset({2})


def test_prefixless_diff_without_git_header() -> None:
    text = "--- src/a b.py\n+++ src/a b.py\n@@ -1 +1 @@\n-x\n+y\n"
    (diff,) = parse_unified_diff(text)
    assert diff.path == "src/a b.py"
    assert (diff.added, diff.removed) == (1, 1)


def test_prefixless_git_diff_with_git_header() -> None:
    text = (
        "diff --git a/x.py a/x.py\nindex 1..2 100644\n--- a/x.py\n+++ a/x.py\n"
        "@@ -1 +1 @@\n-x\n+y\n"
        "diff --git dir/new file dir/new file\nnew file mode 100644\nindex 0000000..e69de29\n"
    )
    files = by_path(parse_unified_diff(text))
    assert set(files) == {"a/x.py", "dir/new file"}
    assert files["dir/new file"].status == FileStatus.ADDED
    assert files["dir/new file"].hunks == ()


def test_new_and_deleted_with_dev_null_plain() -> None:
    text = (
        "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+n\n"
        "--- a/d.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-d\n"
    )
    files = by_path(parse_unified_diff(text))
    assert files["n.txt"].status == FileStatus.ADDED and files["n.txt"].old_path is None
    assert files["d.txt"].status == FileStatus.DELETED


def test_u0_hunks_and_omitted_counts() -> None:
    text = (
        "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n"
        "@@ -2 +2 @@\n-b\n+B\n@@ -5,0 +6,2 @@ sec\n+x\n+y\n@@ -9,2 +10,0 @@\n-p\n-q\n"
    )
    (diff,) = parse_unified_diff(text)
    counts = [(h.old_start, h.old_count, h.new_start, h.new_count) for h in diff.hunks]
    assert counts == [(2, 1, 2, 1), (5, 0, 6, 2), (9, 2, 10, 0)]
    assert diff.changed_lines == frozenset({2, 6, 7})
    assert (diff.added, diff.removed) == (3, 3)


def test_no_newline_markers_on_either_side() -> None:
    text = (
        "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n"
        "\\ No newline at end of file\n+b\n"
        "diff --git a/g b/g\nindex 1..2 100644\n--- a/g\n+++ b/g\n@@ -1 +1,2 @@\n a\n+c\n"
        "\\ No newline at end of file\n"
    )
    files = by_path(parse_unified_diff(text))
    f_lines = files["f"].hunks[0].lines
    assert [ln.no_newline_at_eof for ln in f_lines] == [False, True, False]
    g_lines = files["g"].hunks[0].lines
    assert [ln.no_newline_at_eof for ln in g_lines] == [False, True]


def test_crlf_is_kept_in_line_text() -> None:
    data = b"--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n one\r\n-two\r\n+t\rwo\r\n"
    (diff,) = parse_unified_diff(data)
    assert texts(diff, "context") == ["one\r"]
    assert texts(diff, "add") == ["t\rwo\r"]


def test_quoted_names_with_octal_utf8_and_escapes() -> None:
    text = (
        'diff --git "a/t\\tq\\"b\\\\ \\303\\251.txt" "b/t\\tq\\"b\\\\ \\303\\251.txt"\n'
        "new file mode 100755\nindex 0000000..1\n"
        '--- /dev/null\n+++ "b/t\\tq\\"b\\\\ \\303\\251.txt"\n@@ -0,0 +1 @@\n+x\n'
    )
    (diff,) = parse_unified_diff(text)
    assert diff.path == 't\tq"b\\ é.txt'
    assert diff.new_mode == "100755"
    assert unquote('"\\377x"') == "\udcffx"  # invalid UTF-8 survives as a surrogate


def test_rename_copy_mode_and_symlink_headers() -> None:
    text = (
        "diff --git a/old name.py b/new name.py\nsimilarity index 91%\n"
        "rename from old name.py\nrename to new name.py\nindex 1..2 100644\n"
        "--- a/old name.py\t\n+++ b/new name.py\t\n@@ -1 +1 @@\n-a\n+b\n"
        'diff --git a/src.c "b/c\\303\\266py.c"\nsimilarity index 100%\ncopy from src.c\n'
        'copy to "c\\303\\266py.c"\n'
        "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
        "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1\n--- /dev/null\n"
        "+++ b/link\n@@ -0,0 +1 @@\n+../target\n\\ No newline at end of file\n"
    )
    files = by_path(parse_unified_diff(text))
    renamed = files["new name.py"]
    assert (renamed.status, renamed.old_path, renamed.similarity) == (
        FileStatus.RENAMED,
        "old name.py",
        91,
    )
    copied = files["cöpy.c"]
    assert (copied.status, copied.old_path, copied.similarity) == (FileStatus.COPIED, "src.c", 100)
    mode = files["run.sh"]
    assert mode.mode_only and (mode.old_mode, mode.new_mode) == ("100644", "100755")
    assert files["link"].is_symlink and texts(files["link"], "add") == ["../target"]


def test_binary_files_and_git_binary_patch() -> None:
    text = (
        "diff --git a/img one.png b/img one.png\nindex 1..2 100644\n"
        "Binary files a/img one.png and b/img one.png differ\n"
        "diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000..1\n"
        "GIT binary patch\nliteral 7\nOcmeAS@N;KiVg>*RPXTlQ\n\nliteral 6\nNcmeAS@N;Ki1ONuw0dN2S\n\n"
        "diff --git a/t b/t\nindex 1..2 100644\n--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n"
        "Binary files old/p.bin and new/p.bin differ\n"
    )
    files = by_path(parse_unified_diff(text))
    assert files["img one.png"].binary and files["img one.png"].hunks == ()
    assert files["blob.bin"].binary and files["blob.bin"].status == FileStatus.ADDED
    assert not files["t"].binary
    # Without a `diff --git` header, a `Binary files` line is text to `git apply`, and to us.
    assert "p.bin" not in files


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("literal 7\nOcmeAS@N;KiVh>*RPXTlQ\n\n", "corrupt binary patch"),  # bad zlib data
        ("literal 8\nOcmeAS@N;KiVg>*RPXTlQ\n\n", "corrupt binary patch"),  # wrong size
        ("literal 7\nOcmeAS@N;KiVg>*RPXTl\n\n", "corrupt binary patch"),  # cut line
        ("literal 7\nOcmeAS@N;KiVg>*RPXTlQ\n", "binary patch truncated at end of input"),
        ("blob\n", "unrecognized binary patch"),
    ],
)
def test_corrupt_git_binary_patch_is_refused(data: str, message: str) -> None:
    text = "diff --git a/p.bin b/p.bin\nindex 1..2 100644\nGIT binary patch\n" + data
    with pytest.raises(DiffParseError, match=message):
        parse_unified_diff(text)


def test_type_change_merges_into_one_file() -> None:
    text = (
        "diff --git a/x b/x\ndeleted file mode 120000\nindex 1..0\n--- a/x\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-tgt\n\\ No newline at end of file\n"
        "diff --git a/x b/x\nnew file mode 100644\nindex 0..2\n--- /dev/null\n+++ b/x\n"
        "@@ -0,0 +1 @@\n+text\n"
    )
    (diff,) = parse_unified_diff(text)
    assert diff.status == FileStatus.MODIFIED
    assert (diff.old_mode, diff.new_mode, diff.is_symlink) == ("120000", "100644", False)
    assert (diff.added, diff.removed) == (1, 1)


def test_git_show_preamble_and_format_patch_signature_are_skipped() -> None:
    text = (
        "commit 0123\nAuthor: A <a@b>\n\n    - a message\n    + with diff-like lines\n\n"
        "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
        "-- \n2.39.5\n"
    )
    (diff,) = parse_unified_diff(text)
    assert diff.path == "f"


def test_empty_input_is_zero_files() -> None:
    assert parse_unified_diff(b"") == []
    assert parse_unified_diff("\n\n") == []


def test_streamed_chunks_split_anywhere_parse_the_same() -> None:
    data = ("--- a/é.txt\n+++ b/é.txt\n@@ -1 +1 @@\n-é\r\n+ü\n").encode()
    whole = parse_unified_diff(data)
    for size in (1, 2, 3, 7):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert parse_lines(iter_lines(chunks)) == whole


HEAD = "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\n+++ b/f\n"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("this is not a diff\nat all\n", 1),
        (HEAD + "@@ -1,3 +1,3 @@\n a\n-b\n+c\n", 8),  # truncated at end of input
        (HEAD + "@@ -1,3 +1,3 @@\n a\n-b\n+c\n" + HEAD, 9),  # truncated by the next file
        (HEAD + "@@ -1 +1 @@\n-a\n+b\n+extra\n", 8),  # header count too small
        (HEAD + "@@ -1 +1 @@\n-a\n-b\n", 7),  # more removed lines than declared
        (HEAD + "@@ -x +1 @@\n", 5),  # bad hunk header
        ("diff --git a/f b/f\n@@ -1 +1 @@\n-a\n+b\n", 1),  # no header lines, no ---/+++
        (HEAD + "@@@ -1 -1 +1 @@@\n", 5),  # combined diff
        ("--- a/f\nnot plus\n", 1),  # text: no file header
        ('diff --git "a/broken b/x\n', 1),
        (HEAD + "@@ -1 +1 @@\n-a\n+b\n" + HEAD + "@@ -1 +1 @@\n-a\n+b\n", 8),  # same path twice
    ],
)
def test_malformed_diff_raises_one_line_error_with_line_number(text: str, line: int) -> None:
    with pytest.raises(DiffParseError) as caught:
        parse_unified_diff(text)
    message = str(caught.value)
    assert "\n" not in message
    assert re.search(rf"\bline {line}\b", message), message
