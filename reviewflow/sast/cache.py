"""Pre-scan results cached per file: keyed by the file's path and content, the rules digest
and the semgrep version, under `<reviewflow home>/cache/sast/` (private, like the model stages'
cached answers). A file's entry holds every result on it, added lines or not: which lines a
change adds is applied after, so the same content scanned for another change is reused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from reviewflow.errors import OutputError
from reviewflow.fsutil import write_output
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
