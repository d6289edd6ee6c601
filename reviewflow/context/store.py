"""The on-disk store of index records: one compressed record per (Git blob, language key).

A single SQLite file, `index.sqlite`, under the directory the caller gives (the reviewflow
home's `index/`, or the shared store's). A blob's record never changes, so writers only ever
insert: two processes indexing the same blob write the same bytes and the second is ignored.
SQLite was measured against JSON lines (bench/RESULTS.md): the lookup of a tree's few changed
blobs needs no full read and concurrent writers need no lock of ours.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from reviewflow.context.records import FileIndex
from reviewflow.errors import ReviewError

FILENAME = "index.sqlite"
_BATCH = 500


class IndexStoreError(ReviewError):
    """The index store cannot be opened or written (a full disk, a directory not writable)."""


class IndexStore:
    """Index records by key (`<blob>:<language key>`), read and written in batches."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILENAME
        try:
            directory.mkdir(parents=True, exist_ok=True)
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


def _batches(keys: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(keys), _BATCH):
        yield keys[start : start + _BATCH]
