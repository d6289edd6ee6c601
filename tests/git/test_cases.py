"""Special names and contents through real git, in commit, workspace and stdin modes."""

from __future__ import annotations

import pytest

from reviewflow.git.models import DiffMode, FileStatus
from reviewflow.git.parse import parse_unified_diff
from tests.git.conftest import by_path, collect, texts
from tests.gitutil import GitRepo

ODD = [
    "with space.txt",
    "tab\there.txt",
    'quo"te.txt',
    "back\\slash.txt",
    "ünïcödé/日本語.txt",
    "x b/y z.txt",
    "-leading-dash.txt",
]


@pytest.mark.parametrize("quote_path", ["true", "false"])
def test_odd_names_give_real_names_with_quote_path(repo: GitRepo, quote_path: str) -> None:
    repo.git("config", "core.quotePath", quote_path)
    for name in ODD:
        repo.write(name, f"{name}\nline\n")
    repo.commit("base")
    for name in ODD:
        repo.write(name, f"{name}\nchanged\n")
    repo.git("mv", ODD[0], "renamed é\tx.txt")
    expected = set(ODD[1:]) | {"renamed é\tx.txt"}
    assert set(by_path(collect(repo))) == expected
    # The user's own `git diff` output (quoted per their config) parses to the same names.
    raw = repo.git("diff", "-M", "HEAD").encode("utf-8", "surrogateescape")
    if quote_path == "true":
        assert b"\\303\\274" in raw
    stdin = collect(repo, DiffMode.STDIN, stdin=raw, diff_source="-")
    assert set(by_path(stdin)) == expected
    no_prefix = repo.git("diff", "--no-prefix", "HEAD", "--", ODD[4]).encode()
    assert set(by_path(parse_unified_diff(no_prefix))) == {ODD[4]}
    renamed = by_path(stdin)["renamed é\tx.txt"]
    assert (renamed.status, renamed.old_path) == (FileStatus.RENAMED, ODD[0])


def test_renames_and_copies_with_similarity(repo: GitRepo) -> None:
    body = "".join(f"line {i}\n" for i in range(20))
    repo.write("orig.py", body)
    repo.write("src.py", body.replace("line", "row"))
    repo.commit("base")
    repo.git("mv", "orig.py", "moved.py")
    repo.write("moved.py", body + "extra\n")
    repo.write("copy.py", body.replace("line", "row"))
    repo.write("src.py", body.replace("line", "row") + "tail\n")
    sha = repo.commit("move and copy")
    files = by_path(collect(repo, DiffMode.COMMIT, commit=sha))
    moved, copy = files["moved.py"], files["copy.py"]
    assert (moved.status, moved.old_path) == (FileStatus.RENAMED, "orig.py")
    assert moved.similarity is not None and 80 <= moved.similarity < 100
    assert texts(moved, "add") == ["extra"]
    assert (copy.status, copy.old_path, copy.similarity) == (FileStatus.COPIED, "src.py", 100)
    assert files["src.py"].status == FileStatus.MODIFIED


def test_mode_symlink_binary_delete_empty(repo: GitRepo) -> None:
    repo.write("run.sh", "echo hi\n")
    repo.write("doomed.txt", "a\nb\n")
    repo.write("pic.bin", b"\x89PNG\x00\x01")
    repo.symlink("link", "run.sh")
    repo.commit("base")
    (repo.root / "run.sh").chmod(0o755)
    (repo.root / "doomed.txt").unlink()
    repo.write("pic.bin", b"\x89PNG\x00\x02")
    repo.write("empty.txt", "")
    (repo.root / "link").unlink()
    repo.symlink("link", "doomed.txt")
    repo.symlink("newlink", "../../etc/passwd")
    sha = repo.commit("everything")
    files = by_path(collect(repo, DiffMode.COMMIT, commit=sha))
    run = files["run.sh"]
    assert run.mode_only and (run.old_mode, run.new_mode) == ("100644", "100755")
    assert files["doomed.txt"].status == FileStatus.DELETED
    assert files["doomed.txt"].old_path == "doomed.txt" and files["doomed.txt"].removed == 2
    assert files["pic.bin"].binary and files["pic.bin"].hunks == ()
    empty = files["empty.txt"]
    assert (empty.status, empty.hunks, empty.new_mode) == (FileStatus.ADDED, (), "100644")
    link = files["link"]
    assert link.is_symlink and texts(link, "add") == ["doomed.txt"]
    assert texts(files["newlink"], "add") == ["../../etc/passwd"]


def test_symlink_replaced_by_a_file_is_one_modified_file(repo: GitRepo) -> None:
    repo.symlink("thing", "target")
    repo.commit("link")
    (repo.root / "thing").unlink()
    repo.write("thing", "now a file\n")
    sha = repo.commit("typechange")
    (thing,) = collect(repo, DiffMode.COMMIT, commit=sha).files
    assert (thing.status, thing.old_mode, thing.new_mode) == (
        FileStatus.MODIFIED,
        "120000",
        "100644",
    )
    assert not thing.is_symlink and texts(thing, "add") == ["now a file"]


def test_no_newline_on_either_side_and_crlf(repo: GitRepo) -> None:
    repo.write("old-nl.txt", "a\nb")
    repo.write("new-nl.txt", "a\nb\n")
    repo.write("dos.txt", "one\r\ntwo\r\n")
    repo.commit("base")
    repo.write("old-nl.txt", "a\nb\n")
    repo.write("new-nl.txt", "a\nc")
    repo.write("dos.txt", "one\r\nTWO\r\n")
    files = by_path(collect(repo))
    old_side = files["old-nl.txt"].hunks[0].lines
    assert [(ln.kind, ln.no_newline_at_eof) for ln in old_side] == [
        ("context", False),
        ("del", True),
        ("add", False),
    ]
    new_side = files["new-nl.txt"].hunks[0].lines
    assert [(ln.kind, ln.no_newline_at_eof) for ln in new_side][-1] == ("add", True)
    dos = files["dos.txt"]
    assert texts(dos, "add") == ["TWO\r"] and texts(dos, "context") == ["one\r"]


@pytest.mark.parametrize("context", [0, 1, 3])
def test_context_lines(repo: GitRepo, context: int) -> None:
    repo.write("f.txt", "".join(f"{i}\n" for i in range(1, 21)))
    repo.commit("base")
    repo.write("f.txt", "".join(f"{i}\n" for i in range(1, 21) if i != 5).replace("15", "X"))
    (diff,) = collect(repo, context_lines=context).files
    assert all(sum(ln.kind == "context" for ln in h.lines) <= 2 * context for h in diff.hunks)
    assert (diff.added, diff.removed, diff.changed_lines) == (1, 2, frozenset({14}))
    if context == 0:
        first = diff.hunks[0]
        assert (first.old_start, first.old_count, first.new_start, first.new_count) == (5, 1, 4, 0)
