"""Cross-check: our parse of every commit agrees with `git diff --numstat -z` and `--raw -z`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reviewflow.git.encoding import from_shown
from reviewflow.git.models import DiffMode, FileDiff, FileStatus
from reviewflow.git.quoting import decode_path
from tests.git.conftest import collect
from tests.git.history import build_history

_RAW_STATUS = {
    "A": FileStatus.ADDED,
    "D": FileStatus.DELETED,
    "M": FileStatus.MODIFIED,
    "T": FileStatus.MODIFIED,
    "R": FileStatus.RENAMED,
    "C": FileStatus.COPIED,
}
Names = tuple[FileStatus, str | None, str, int | None]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout


def _numstat(data: bytes) -> dict[str, tuple[int, int] | None]:
    """path -> (added, removed), None for binary; type changes listed twice are summed."""
    fields = data.split(b"\0")
    out: dict[str, tuple[int, int] | None] = {}
    i = 0
    while i < len(fields) and fields[i]:
        added, removed, path = fields[i].split(b"\t", 2)
        if not path:  # a rename or copy: the two names follow
            path = fields[i + 2]
            i += 2
        i += 1
        key = decode_path(path)
        if added == b"-":
            out[key] = None
            continue
        before = out.get(key) or (0, 0)
        out[key] = (before[0] + int(added), before[1] + int(removed))
    return out


def _raw(data: bytes) -> dict[str, Names]:
    """path -> (status, old path, path, score) from `--raw -z`."""
    fields = data.split(b"\0")
    out: dict[str, Names] = {}
    i = 0
    while i < len(fields) and fields[i]:
        letter = fields[i].split(b" ")[-1].decode()
        status = _RAW_STATUS[letter[0]]
        if status in (FileStatus.RENAMED, FileStatus.COPIED):
            old, new = decode_path(fields[i + 1]), decode_path(fields[i + 2])
            out[new] = (status, old, new, int(letter[1:]))
            i += 3
            continue
        path = decode_path(fields[i + 1])
        out[path] = (status, None if status == FileStatus.ADDED else path, path, None)
        i += 2
    return out


def _ours(diff: FileDiff) -> Names:
    """As Git names them: the change shows a name's bytes that are not UTF-8 as `\\xNN`."""
    old = None if diff.old_path is None else from_shown(diff.old_path)
    return (diff.status, old, from_shown(diff.path), diff.similarity)


def test_every_file_of_every_commit_matches_git(tmp_path: Path) -> None:
    root = tmp_path / "history"
    build_history(root, commits=150, seed=20240611)
    shas = _git(root, "rev-list", "--reverse", "main").decode().split()
    assert len(shas) == 150
    empty_tree = _git(root, "hash-object", "-t", "tree", "/dev/null").decode().strip()
    checked = {"files": 0, "renamed": 0, "copied": 0, "binary": 0, "modes": 0, "odd": 0}
    for index, sha in enumerate(shas):
        parent = shas[index - 1] if index else empty_tree
        flags = ["-c", "core.quotePath=false", "diff", "-M", "-C", "--end-of-options"]
        numstat = _numstat(_git(root, *flags[:-1], "--numstat", "-z", parent, sha))
        raw = _raw(_git(root, *flags[:-1], "--raw", "-z", parent, sha))
        change = collect(root, DiffMode.COMMIT, commit=sha)
        ours = {from_shown(f.path): f for f in change.files}
        assert len(ours) == len(change.files), f"duplicate path in {sha}"
        assert set(ours) == set(raw) == set(numstat), sha
        for path, diff in ours.items():
            assert _ours(diff) == raw[path], (sha, path)
            counts = numstat[path]
            assert diff.binary == (counts is None), (sha, path)
            if counts is not None:
                assert (diff.added, diff.removed) == counts, (sha, path)
            checked["files"] += 1
            checked["renamed"] += diff.status == FileStatus.RENAMED
            checked["copied"] += diff.status == FileStatus.COPIED
            checked["binary"] += diff.binary
            checked["modes"] += diff.mode_only or diff.is_symlink
            checked["odd"] += any(c in path for c in ' \t"\\\n') or not path.isascii()
    assert min(checked.values()) >= 5, checked
