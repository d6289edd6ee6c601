"""collect_change in each mode on real repositories, and the bad inputs of each."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from reviewflow.errors import ConfigError, DiffParseError, GitError
from reviewflow.git.models import DiffMode, FileStatus
from reviewflow.git.repo import find_repo_root
from reviewflow.git.snapshot import show_file
from tests.git.conftest import by_path, collect, texts
from tests.gitutil import GitRepo


def test_find_repo_root_from_a_subdirectory(repo: GitRepo) -> None:
    sub = repo.root / "a" / "b"
    sub.mkdir(parents=True)
    assert find_repo_root(sub).resolve() == repo.root.resolve()


def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError, match=r"^not a Git repository: .*plain$"):
        find_repo_root(plain)
    with pytest.raises(GitError, match="not a Git repository"):
        collect(plain)


def test_workspace_combines_staged_unstaged_and_untracked(repo: GitRepo) -> None:
    repo.write("a.py", "one\ntwo\nthree\n")
    repo.write("gone.py", "bye\n")
    base = repo.commit("base")
    repo.write("a.py", "one\nTWO\nthree\n")
    repo.git("add", "a.py")
    repo.write("a.py", "one\nTWO\nthree\nfour\n")  # unstaged on top of staged
    repo.git("rm", "-q", "gone.py")
    repo.write("new.txt", "x\ny")  # untracked, no newline at end
    repo.write("blob.bin", b"\x00\x01\x02")
    repo.write("empty.txt", "")
    repo.write(".gitignore", "ignored.log\n")
    repo.write("ignored.log", "noise\n")
    change = collect(repo)
    files = by_path(change)
    assert set(files) == {"a.py", "gone.py", "new.txt", "blob.bin", "empty.txt", ".gitignore"}
    assert texts(files["a.py"], "add") == ["TWO", "four"]
    assert files["gone.py"].status == FileStatus.DELETED
    new = files["new.txt"]
    assert new.status == FileStatus.ADDED and new.changed_lines == frozenset({1, 2})
    assert [ln.no_newline_at_eof for ln in new.hunks[0].lines] == [False, True]
    assert files["blob.bin"].binary and files["empty.txt"].hunks == ()
    assert (change.base_sha, change.head_sha, change.snapshot_ref) == (base, base, None)


def test_untracked_symlink_is_its_target_text_never_followed(repo: GitRepo, tmp_path: Path) -> None:
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOP SECRET\n")
    repo.commit("init")
    repo.symlink("link", str(secret))
    repo.symlink("dangling", "../nowhere")
    files = by_path(collect(repo))
    link = files["link"]
    assert link.is_symlink and link.new_mode == "120000"
    assert texts(link, "add") == [str(secret)]
    assert link.hunks[0].lines[0].no_newline_at_eof
    assert texts(files["dangling"], "add") == ["../nowhere"]
    assert all(
        "TOP SECRET" not in ln.text for f in files.values() for h in f.hunks for ln in h.lines
    )


def test_unborn_repository_uses_the_cached_diff(repo: GitRepo) -> None:
    repo.write("staged.py", "print(1)\n")
    repo.git("add", "staged.py")
    repo.write("loose.py", "print(2)\n")
    change = collect(repo)
    files = by_path(change)
    assert set(files) == {"staged.py", "loose.py"}
    assert all(f.status == FileStatus.ADDED for f in files.values())
    assert change.base_sha is None and change.head_sha is None


def test_untracked_copy_of_an_unstaged_deletion_is_one_file(repo: GitRepo) -> None:
    repo.write("keep.py", "a\nb\n")
    repo.commit("base")
    repo.git("rm", "-q", "--cached", "keep.py")  # still in the tree, now untracked
    repo.write("keep.py", "a\nc\n")
    (only,) = collect(repo).files
    assert (only.path, only.status) == ("keep.py", FileStatus.MODIFIED)
    assert texts(only, "add") == ["a", "c"]


def test_diff_sha256_is_stable_and_covers_untracked_content(repo: GitRepo) -> None:
    repo.write("a.txt", "a\n")
    repo.commit("base")
    repo.write("a.txt", "b\n")
    repo.write("u.txt", "one\n")
    first, second = collect(repo), collect(repo)
    assert first.diff_sha256 == second.diff_sha256 and len(first.diff_sha256) == 64
    repo.write("u.txt", "two\n")
    assert collect(repo).diff_sha256 != first.diff_sha256


def test_commit_mode_root_normal_and_merge(repo: GitRepo) -> None:
    repo.write("a.txt", "1\n")
    root = repo.commit("root")
    change = collect(repo, DiffMode.COMMIT, commit=root)
    assert (change.base_sha, change.head_sha, change.snapshot_ref) == (None, root, root)
    assert by_path(change)["a.txt"].status == FileStatus.ADDED
    repo.git("checkout", "-q", "-b", "side")
    repo.write("side.txt", "s\n")
    repo.commit("side")
    repo.git("checkout", "-q", "main")
    repo.write("a.txt", "2\n")
    second = repo.commit("second")
    change = collect(repo, DiffMode.COMMIT, commit="HEAD")
    assert (change.base_sha, change.head_sha) == (root, second)
    repo.git("merge", "-q", "--no-edit", "side")
    merge = collect(repo, DiffMode.COMMIT, commit="HEAD")  # against the first parent
    assert set(by_path(merge)) == {"side.txt"} and merge.base_sha == second


def test_range_mode_uses_the_merge_base(repo: GitRepo) -> None:
    repo.write("base.txt", "b\n")
    base = repo.commit("base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("feature.txt", "f\n")
    tip = repo.commit("feature")
    repo.git("checkout", "-q", "main")
    repo.write("main-only.txt", "m\n")
    repo.commit("main moves on")
    change = collect(repo, DiffMode.RANGE, from_ref="main", to_ref="feature")
    assert set(by_path(change)) == {"feature.txt"}
    assert (change.base_sha, change.head_sha, change.snapshot_ref) == (base, tip, tip)


def test_range_with_unrelated_histories(repo: GitRepo) -> None:
    repo.write("a.txt", "a\n")
    repo.commit("main")
    repo.git("checkout", "-q", "--orphan", "other")
    repo.write("b.txt", "b\n")
    repo.commit("other")
    with pytest.raises(GitError, match="no merge base between 'main' and 'other'"):
        collect(repo, DiffMode.RANGE, from_ref="main", to_ref="other")


def test_range_needs_both_refs(repo: GitRepo) -> None:
    repo.commit("init")
    with pytest.raises(ConfigError):
        collect(repo, DiffMode.RANGE, from_ref="main")


@pytest.mark.parametrize("ref", ["nope", "--output=/tmp/pwned", "-p", "HEAD~5", ""])
def test_unknown_refs_are_never_options(repo: GitRepo, ref: str, tmp_path: Path) -> None:
    repo.commit("init")
    with pytest.raises(GitError, match=rf"^unknown revision '{ref}'$"):
        collect(repo, DiffMode.COMMIT, commit=ref)
    with pytest.raises(GitError, match=rf"^unknown revision '{ref}'$"):
        collect(repo, DiffMode.RANGE, from_ref="main", to_ref=ref)
    with pytest.raises(GitError, match=rf"^unknown revision '{ref}'$"):
        show_file(repo.root, ref, "x")
    assert not Path("/tmp/pwned").exists()


@pytest.mark.parametrize("ref", ["HEAD~1..HEAD", "HEAD~1...HEAD"])
def test_a_range_given_for_one_commit_is_one_line(repo: GitRepo, ref: str) -> None:
    repo.commit("init")
    repo.commit("next")
    with pytest.raises(GitError, match=rf"^'{re.escape(ref)}' is a range, not one commit$"):
        collect(repo, DiffMode.COMMIT, commit=ref)


def test_stdin_mode_from_stream_and_file(repo: GitRepo, tmp_path: Path) -> None:
    repo.write("a.txt", "a\n")
    head = repo.commit("init")
    repo.write("a.txt", "b\n")
    data = repo.git("diff").encode("utf-8", "surrogateescape")
    change = collect(repo, DiffMode.STDIN, stdin=data, diff_source="-")
    assert texts(by_path(change)["a.txt"], "add") == ["b"]
    assert (change.head_sha, change.snapshot_ref, change.base_sha) == (head, None, None)
    patch = tmp_path / "change.patch"
    patch.write_bytes(data)
    from_file = collect(repo, DiffMode.STDIN, diff_source=str(patch))
    assert from_file.files == change.files and from_file.diff_sha256 == change.diff_sha256


def test_stdin_bad_inputs(repo: GitRepo, tmp_path: Path) -> None:
    assert collect(repo, DiffMode.STDIN, stdin=b"", diff_source="-").files == ()
    with pytest.raises(DiffParseError, match=r"line 1"):
        collect(repo, DiffMode.STDIN, stdin=b"garbage\n", diff_source="-")
    with pytest.raises(DiffParseError, match=r"^cannot read diff file '.*missing.patch'"):
        collect(repo, DiffMode.STDIN, diff_source=str(tmp_path / "missing.patch"))
    unborn = collect(repo, DiffMode.STDIN, stdin=b"", diff_source="-")
    assert unborn.head_sha is None


def test_show_file_reads_a_ref(repo: GitRepo) -> None:
    repo.write("d i r/é.txt", "content\n")
    sha = repo.commit("c")
    assert show_file(repo.root, sha, "d i r/é.txt") == b"content\n"
    assert show_file(repo.root, "HEAD", "missing") is None


def test_user_config_and_environment_cannot_change_the_format(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write("a.txt", "one\ntwo\n")
    repo.write(".gitattributes", "*.txt diff=shout\n")
    repo.commit("base")
    repo.write("a.txt", "one\nTWO\n")
    for key, value in [
        ("diff.noprefix", "true"),
        ("diff.mnemonicPrefix", "true"),
        ("color.ui", "always"),
        ("color.diff", "always"),
        ("diff.external", "false"),
        ("diff.shout.textconv", "tr a-z A-Z"),
        ("diff.relative", "true"),
        ("core.quotePath", "true"),
        ("diff.suppressBlankEmpty", "true"),
    ]:
        repo.git("config", key, value)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", "false")
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=9")
    (diff,) = collect(repo).files
    assert diff.path == "a.txt"
    assert texts(diff, "del") == ["two"] and texts(diff, "add") == ["TWO"]
    assert texts(diff, "context") == ["one"]


def test_a_file_named_like_the_ref_is_not_ambiguous(repo: GitRepo) -> None:
    repo.write("HEAD", "file called HEAD\n")
    repo.commit("base")
    repo.write("HEAD", "changed\n")
    assert set(by_path(collect(repo))) == {"HEAD"}


def test_unreadable_untracked_file_is_a_warning(repo: GitRepo) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    repo.commit("init")
    locked = repo.write("locked.txt", "x\n")
    locked.chmod(0)
    try:
        change = collect(repo)
    finally:
        locked.chmod(0o644)
    assert change.files == () and "locked.txt" in change.warnings[0]
