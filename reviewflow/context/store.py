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
            raise IndexStoreError(f"cannot open the code index at {self.path}: {err}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def present(self, keys: Iterable[str]) -> set[str]:
        """The keys among `keys` that have a record."""
        found: set[str] = set()
        for batch in _batches(list(keys)):
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(f"SELECT key FROM records WHERE key IN ({marks})", batch)
            found.update(key for (key,) in rows)
        return found

    def load(self, keys: Iterable[str]) -> dict[str, FileIndex]:
        """The records of `keys` that are stored."""
        out: dict[str, FileIndex] = {}
        for batch in _batches(sorted(set(keys))):
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT key, record FROM records WHERE key IN ({marks})", batch
            )
            for key, record in rows:
                out[key] = FileIndex.from_json(zlib.decompress(record).decode("utf-8"))
        return out

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
