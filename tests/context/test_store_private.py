"""The index store is the user's alone whatever the umask of the process that makes it (a Dask
worker's, a CLI's): its folders 0700, its file 0600, SQLite's journal as its file; one made
before with other permissions is set back."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewflow.context.build import build_index
from reviewflow.context.store import FILENAME, IndexStore
from tests.context.conftest import make_repo

FILES = {"pkg/util.py": "def helper(x):\n    return x * 2\n"}


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # what a worker started without reviewflow's umask has
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("open_umask")
def test_a_new_store_is_private_and_so_is_its_journal(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    directory = shared / "nested" / "index"
    journals: list[int] = []
    with IndexStore(directory) as store:
        store._db.execute("BEGIN IMMEDIATE")
        store._db.execute("INSERT INTO records VALUES ('probe', x'00')")
        journal = directory / f"{FILENAME}-journal"
        journals.append(_mode(journal))  # written while a transaction is open
        store._db.execute("ROLLBACK")
        stats = build_index(repo.root, "HEAD", store)
    assert stats.parsed == 1
    assert (_mode(directory), _mode(directory.parent)) == (0o700, 0o700)
    assert _mode(directory / FILENAME) == 0o600 and journals == [0o600]
    assert _mode(shared) == 0o755  # the folder the user gave keeps its mode


@pytest.mark.usefixtures("open_umask")
def test_a_store_made_with_other_permissions_is_set_back(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    directory.mkdir(mode=0o755)
    sqlite3.connect(directory / FILENAME).close()
    (directory / FILENAME).chmod(0o644)
    with IndexStore(directory):
        pass
    assert (_mode(directory), _mode(directory / FILENAME)) == (0o700, 0o600)
