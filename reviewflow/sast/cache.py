"""Pre-scan results cached per file: keyed by the file's path and content, the rules digest
and the semgrep version, under `<reviewflow home>/cache/sast/` (private, like the model stages'
cached answers). A file's entry holds every result on it, added lines or not: which lines a
change adds is applied after, so the same content scanned for another change is reused."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pydantic import TypeAdapter, ValidationError

from reviewflow.errors import OutputError
from reviewflow.fsutil import private_dirs, write_output
from reviewflow.sast.models import SastResult

CACHE_DIR = ("cache", "sast")
FORMAT = "sast-cache-1"  # bumped when what a scan produces changes (flags, trimming)
_RESULTS = TypeAdapter(list[SastResult])


def cache_key(rules_digest: str, semgrep_version: str, path: str, content: bytes) -> str:
    """The key of one file's results: what can change them and nothing else."""
    material = [FORMAT, semgrep_version, rules_digest, path, hashlib.sha256(content).hexdigest()]
    return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogateescape")).hexdigest()


class SastCache:
    """Results by key, one small JSON file each (0600); `refresh` ignores what is stored."""

    def __init__(self, home: str | Path, refresh: bool = False) -> None:
        self.root = Path(home).joinpath(*CACHE_DIR)
        self.refresh = refresh

    def get(self, key: str) -> list[SastResult] | None:
        if self.refresh:
            return None
        try:
            return _RESULTS.validate_json((self.root / f"{key}.json").read_bytes())
        except (OSError, ValidationError, ValueError):
            return None  # absent, or unreadable: scanned again

    def put(self, key: str, results: list[SastResult]) -> None:
        """Store one file's results; a cache that cannot be written is skipped, not fatal."""
        try:
            write_output(self.root / f"{key}.json", _RESULTS.dump_json(results))
        except OutputError:
            return

    def acquire(self) -> IO[str] | None:
        """The cache's lock, taken (waiting for a scan that holds it): one scan at a time per
        home, so a scan waiting for another finds its results here. Closing the handle
        releases it; None when the cache folder cannot be written (scans then go unlocked)."""
        try:
            private_dirs(self.root)
            handle = open(self.root / ".lock", "a")  # noqa: SIM115 (closed by the caller)
        except OSError:
            return None
        fcntl.flock(handle, fcntl.LOCK_EX)
        return handle

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        handle = self.acquire()
        try:
            yield
        finally:
            if handle is not None:
                handle.close()

    def version_checked(self, stamp: str) -> bool:
        """Whether the semgrep with this `stamp` (its path and file identity) passed the
        version check before (a file per stamp; checked again once semgrep is reinstalled)."""
        return (self.root / f"semgrep-{stamp}.ok").is_file()

    def mark_version_checked(self, stamp: str) -> None:
        with contextlib.suppress(OutputError):
            write_output(self.root / f"semgrep-{stamp}.ok", b"")


def executable_stamp(path: str, version: str) -> str:
    """What identifies an installed semgrep: its real path, file identity and the version
    it must be (a reinstall or an upgrade rewrites the file, so the stamp changes)."""
    real = os.path.realpath(path)
    info = os.stat(real)
    material = [real, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, version]
    return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogateescape")).hexdigest()
