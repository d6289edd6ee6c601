"""The on-disk store of index records: one compressed record per (Git blob, language key).

A single SQLite file, `index.sqlite`, under the directory the caller gives (the reviewflow
home's `index/`, or the shared store's, which Dask workers read too). A blob's record never
changes, so writers only ever insert: two processes indexing the same blob write the same bytes
and the second is ignored. The records hold the reviewed source's names and lines, so the
store is the user's alone whatever the umask (a Dask worker's included): its folder 0700, its
file 0600 (SQLite gives its journal the file's mode), set back to those when the user owns one
made with others.
SQLite was measured against JSON lines (bench/RESULTS.md): the lookup of a tree's few changed
blobs needs no full read and concurrent writers need no lock of ours.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from reviewflow.context.records import FileIndex
from reviewflow.errors import ReviewError
from reviewflow.fsutil import private_dirs

FILENAME = "index.sqlite"
_BATCH = 500
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


class IndexStoreError(ReviewError):
    """The index store cannot be opened or written (a full disk, a directory not writable)."""


class IndexStore:
    """Index records by key (`<blob>:<language key>`), read and written in batches."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILENAME
        try:
            _make_private(directory, self.path)
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, record BLOB NOT NULL)"
                " WITHOUT ROWID"
            )
        except (OSError, sqlite3.Error) as err:
            raise IndexStoreError(
                f"cannot open the code index at {self.path} ({err}): remove it to rebuild it"
            ) from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def present(self, keys: Iterable[str]) -> set[str]:
        """The keys among `keys` that have a record."""
        return {key for key, _ in self._rows("key, NULL", keys)}

    def load(self, keys: Iterable[str]) -> dict[str, FileIndex]:
        """The records of `keys` that are stored."""
        rows = self._rows("key, record", keys)
        try:
            return {
                key: FileIndex.from_json(zlib.decompress(record).decode("utf-8"))
                for key, record in rows
            }
        except (zlib.error, ValueError, LookupError, TypeError):
            raise IndexStoreError(self._damaged("a damaged record")) from None

    def _rows(self, columns: str, keys: Iterable[str]) -> list[tuple[str, bytes]]:
        out: list[tuple[str, bytes]] = []
        try:
            for batch in _batches(sorted(set(keys))):
                marks = ",".join("?" * len(batch))
                query = f"SELECT {columns} FROM records WHERE key IN ({marks})"
                out.extend(self._db.execute(query, batch))
        except sqlite3.Error as err:
            raise IndexStoreError(self._damaged(str(err))) from None
        return out

    def _damaged(self, what: str) -> str:
        return f"cannot read the code index at {self.path} ({what}): remove it to rebuild it"

    def save(self, records: Iterable[tuple[str, FileIndex]]) -> None:
        rows = [(key, zlib.compress(rec.to_json().encode("utf-8"), 6)) for key, rec in records]
        try:
            with self._db:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR IGNORE INTO records VALUES (?, ?)", rows)
        except sqlite3.Error as err:
            raise IndexStoreError(f"cannot write the code index at {self.path}: {err}") from None


def _make_private(directory: Path, path: Path) -> None:
    """`directory` (and its missing parents) made 0700, the store's file `path` made 0600;
    either, when the user owns it and it has other permissions, set back to those."""
    private_dirs(directory)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))  # an existing one: kept
    for item, mode in ((directory, PRIVATE_DIR), (path, PRIVATE_FILE)):
        info = item.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) != mode:
            item.chmod(mode)


def _batches(keys: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(keys), _BATCH):
        yield keys[start : start + _BATCH]
