"""An audit's change on real repositories: the working tree as it is (uncommitted edits and
untracked files included, ignored and deleted files not), or a commit's tree; files and
directories; odd names; paths that hold nothing to audit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewflow.errors import ConfigError, GitError
from reviewflow.git.audit import repo_relative
from reviewflow.git.models import DiffMode, FileStatus
from tests.git.conftest import by_path, collect, texts
from tests.gitutil import GitRepo


@pytest.fixture
def audited(repo: GitRepo) -> GitRepo:
    repo.write("src/app.py", "def f(x):\n    return x\n")
    repo.write("src/util/io.py", "import os\n")
    repo.write("README.md", "# app\n")
    repo.write("logo.png", b"\x89PNG\x00\x01")
    repo.write("gone.py", "bye\n")
    repo.write(".gitignore", "*.log\n")
    repo.commit("base")
    repo.write("src/app.py", "def f(x):\n    return x + 1\n")  # an uncommitted edit
    repo.write("src/new.py", "NEW = 1")  # untracked, not ignored, no newline at the end
    repo.write("src/debug.log", "noise\n")  # ignored
    (repo.root / "gone.py").unlink()  # tracked, deleted on disk
    return repo


def test_all_reads_the_working_tree_as_it_is_each_file_wholly_added(audited: GitRepo) -> None:
    change = collect(audited, DiffMode.AUDIT)
    files = by_path(change)
    assert set(files) == {
        ".gitignore",
        "README.md",
        "logo.png",
        "src/app.py",
        "src/new.py",
        "src/util/io.py",
    }
    assert all(f.status is FileStatus.ADDED and f.removed == 0 for f in files.values())
    assert texts(files["src/app.py"], "add") == ["def f(x):", "    return x + 1"]
    assert texts(files["src/app.py"], "context") == []
    assert files["src/app.py"].changed_lines == frozenset({1, 2})
    assert files["src/new.py"].hunks[0].lines[-1].no_newline_at_eof
    assert files["logo.png"].binary
    assert change.snapshot_ref is None and change.base_sha is None
    assert change.head_sha == audited.head()


def test_a_commit_audit_reads_that_tree_and_never_the_disk(audited: GitRepo) -> None:
    head = audited.head()
    change = collect(audited, DiffMode.AUDIT, commit="HEAD")
    files = by_path(change)
    assert set(files) == {".gitignore", "README.md", "logo.png", "gone.py", "src/app.py"} | {
        "src/util/io.py"
    }
    assert texts(files["src/app.py"], "add") == ["def f(x):", "    return x"]
    assert files["logo.png"].binary
    assert change.snapshot_ref == change.head_sha == head and change.base_sha is None


def test_files_and_directories_keep_only_what_lies_under_them(audited: GitRepo) -> None:
    root = audited.root
    change = collect(audited, DiffMode.AUDIT, paths=(str(root / "src" / "util"), "README.md"))
    assert [f.path for f in change.files] == ["README.md", "src/util/io.py"]
    at_commit = collect(audited, DiffMode.AUDIT, commit="HEAD", paths=("src",))
    assert [f.path for f in at_commit.files] == ["src/app.py", "src/util/io.py"]
    # A name that only begins like a directory is not under it.
    audited.write("src2.py", "x = 1\n")
    assert [f.path for f in collect(audited, DiffMode.AUDIT, paths=("src2.py",)).files] == [
        "src2.py"
    ]


def test_the_same_files_give_the_same_change_twice(audited: GitRepo) -> None:
    first, second = collect(audited, DiffMode.AUDIT), collect(audited, DiffMode.AUDIT)
    assert first.diff_sha256 == second.diff_sha256 and first.files == second.files
    audited.write("src/app.py", "def f(x):\n    return x + 2\n")
    assert collect(audited, DiffMode.AUDIT).diff_sha256 != first.diff_sha256


def test_odd_names_are_read_as_they_are(repo: GitRepo) -> None:
    latin1 = os.fsdecode(b"caf\xe9.py")  # not UTF-8: kept as surrogates, as a diff's names are
    names = ["with space.py", "new\nline.py", "ünï/cödé.py", '"quoted".py', "-dash.py", latin1]
    for name in names:
        repo.write(name, f"# {name!r}\n")
    repo.commit("odd names")
    read = {*names[:-1], "caf\\xe9.py"}  # as every mode names it: the byte shown as `\xNN`
    for commit in (None, "HEAD"):
        files = by_path(collect(repo, DiffMode.AUDIT, commit=commit))
        assert set(files) == read
        assert texts(files["ünï/cödé.py"], "add") == ["# 'ünï/cödé.py'"]
        assert texts(files["new\nline.py"], "add") == ["# 'new\\nline.py'"]
    only = collect(repo, DiffMode.AUDIT, paths=(str(repo.root / latin1), "-dash.py"))
    assert [f.path for f in only.files] == ["-dash.py", "caf\\xe9.py"]


def test_a_symlink_is_its_target_text_and_a_submodule_is_not_read(repo: GitRepo) -> None:
    repo.write("a.py", "x = 1\n")
    repo.symlink("link.py", "a.py")
    repo.commit("link")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.head()},vendored")
    repo.commit("a submodule entry")
    for commit in (None, "HEAD"):
        files = by_path(collect(repo, DiffMode.AUDIT, commit=commit))
        assert set(files) == {"a.py", "link.py"}
        assert files["link.py"].is_symlink and texts(files["link.py"], "add") == ["a.py"]


@pytest.mark.parametrize(
    ("paths", "commit", "message"),
    [
        (("missing.py",), None, "cannot audit 'missing.py': no such file or directory"),
        (("src/debug.log",), None, "nothing to audit at 'src/debug.log' (Git ignores it"),
        (("missing.py",), "HEAD", "nothing to audit at 'missing.py' in commit "),
        (("src/new.py",), "HEAD", "nothing to audit at 'src/new.py' in commit "),
        (("../elsewhere",), None, "cannot audit '../elsewhere': it is outside the repository "),
        ((".git/config",), None, "cannot audit '.git/config': it is inside the repository's .git"),
    ],
)
def test_a_path_with_nothing_to_audit_is_one_line(
    audited: GitRepo, paths: tuple[str, ...], commit: str | None, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        collect(audited, DiffMode.AUDIT, commit=commit, paths=paths)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_an_unknown_commit_is_a_git_error(audited: GitRepo) -> None:
    with pytest.raises(GitError, match="unknown revision 'nope'"):
        collect(audited, DiffMode.AUDIT, commit="nope")


def test_paths_are_read_from_the_top_through_a_symlinked_directory(
    repo: GitRepo, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(repo.root)
    assert repo_relative(repo.root, str(alias / "src" / "a.py")) == "src/a.py"
    assert repo_relative(repo.root, str(alias)) == ""
    assert repo_relative(repo.root, "src/../b.py") == "b.py"


def test_a_blob_missing_from_the_repository_is_a_git_error(repo: GitRepo) -> None:
    """A commit whose tree names a blob the object store lacks (a broken or partial copy)."""
    repo.write("a.py", "x = 1\n")
    repo.commit("base")
    lost = "0123456789abcdef0123456789abcdef01234567"
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{lost},lost.py")
    tree = repo.git("write-tree", "--missing-ok").strip()
    broken = repo.git("commit-tree", tree, "-p", "HEAD", "-m", "broken").strip()
    with pytest.raises(GitError) as refused:
        collect(repo, DiffMode.AUDIT, commit=broken)
    message = "the audited commit's tree names a file this repository lacks: 'lost.py' (0123"
    assert str(refused.value).startswith(message)
    audited = collect(repo, DiffMode.AUDIT, commit=broken, paths=("a.py",))  # not wanted
    assert [f.path for f in audited.files] == ["a.py"]
