"""The files a review covers, by path, with one digest of their changes (for cache keys)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

from reviewflow.git.models import FileDiff


class ReviewedFiles:
    """The kept files of a change by path; `digest` identifies all of their hunks.

    A plain class on purpose: Prefect walks dataclasses and models given to a task to find
    futures in them. A relocation or filter task gets `only` the files it needs: the whole
    mapping to every one of them was data growing with the square of the change (pickled to
    each Dask worker: 1.9 MB a task at 1,000 files).
    """

    __slots__ = ("digest", "files")

    def __init__(self, files: Mapping[str, FileDiff], digest: str) -> None:
        self.files = files
        self.digest = digest

    @classmethod
    def of(cls, files: list[FileDiff] | tuple[FileDiff, ...]) -> ReviewedFiles:
        digest = hashlib.sha256()
        for item in sorted(files, key=lambda f: f.path):
            digest.update(file_identity(item).encode() + b"\0")
        return cls({item.path: item for item in files}, digest.hexdigest())

    def only(self, paths: Iterable[str]) -> ReviewedFiles:
        """These of the files, under the whole change's digest (a stage's cache key is the
        same whichever subset it is given)."""
        return ReviewedFiles({p: self.files[p] for p in paths if p in self.files}, self.digest)

    def cache_identity(self) -> str:
        return self.digest


def file_identity(file: FileDiff) -> str:
    """A hash of one file's change: its paths, status, modes and every hunk's raw lines."""
    head = [file.path, file.old_path, file.status.value, file.old_mode, file.new_mode]
    digest = hashlib.sha256(json.dumps(head).encode())
    for hunk in file.hunks:
        spans = f"@{hunk.old_start},{hunk.old_count},{hunk.new_start},{hunk.new_count}\n"
        digest.update(spans.encode())
        digest.update("\n".join(hunk.body).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()
