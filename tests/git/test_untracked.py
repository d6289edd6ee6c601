"""Untracked files over the read limit are sized, never read: no hunks, their size noted."""

from __future__ import annotations

import os

from reviewflow.git.models import FileStatus
from reviewflow.git.untracked import MAX_UNTRACKED_BYTES
from tests.git.conftest import by_path, collect
from tests.gitutil import GitRepo

_MIB = 1 << 20


def test_large_untracked_file_is_not_read(repo: GitRepo) -> None:
    repo.commit("init")
    # Text first, then a 20 MiB hole: read, it would be a text file (no NUL in the first
    # 8000 bytes) with a huge hunk; sized first, it costs no disk (the filter says too_large).
    big = repo.write("big.log", "line of text\n" * 1000)
    os.truncate(big, 20 * _MIB)
    repo.write("small.py", "x = 1\n")
    change = collect(repo)
    files = by_path(change)
    assert files["big.log"].unread_bytes == 20 * _MIB and files["big.log"].hunks == ()
    assert files["big.log"].status == FileStatus.ADDED
    assert files["small.py"].unread_bytes is None and files["small.py"].added == 1
    assert change.warnings == ()


def test_untracked_file_at_the_limit_is_read(repo: GitRepo) -> None:
    repo.commit("init")
    exact = repo.write("exact.txt", "line of text\n" * 1000)
    os.truncate(exact, MAX_UNTRACKED_BYTES)  # NULs only past the 8000-byte probe: text
    change = collect(repo)
    (diff,) = change.files
    assert not diff.binary and change.warnings == ()
    assert diff.added == 1001  # the 1000 lines and the unterminated run of NULs


def test_large_file_digest_follows_its_size(repo: GitRepo) -> None:
    repo.commit("init")
    big = repo.write("big.bin", b"")
    os.truncate(big, 17 * _MIB)
    first = collect(repo).diff_sha256
    assert collect(repo).diff_sha256 == first
    os.truncate(big, 18 * _MIB)
    assert collect(repo).diff_sha256 != first
