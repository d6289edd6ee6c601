"""The parsed shape of a change: files, hunks and lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal


class FileStatus(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    COPIED = "copied"


class DiffMode(StrEnum):
    WORKSPACE = "workspace"
    COMMIT = "commit"
    RANGE = "range"
    STDIN = "stdin"


LineKind = Literal["context", "add", "del"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One body line of a hunk; `old_no`/`new_no` are 1-based, None on the side it is absent."""

    kind: LineKind
    text: str
    old_no: int | None
    new_no: int | None
    no_newline_at_eof: bool = False


@dataclass(frozen=True, slots=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True, slots=True)
class FileDiff:
    """Everything the diff says about one path. `path` is the new path (old path if deleted)."""

    path: str
    old_path: str | None
    status: FileStatus
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    similarity: int | None = None
    hunks: tuple[Hunk, ...] = ()
    is_symlink: bool = False

    @property
    def added(self) -> int:
        """Number of added lines."""
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "add")

    @property
    def removed(self) -> int:
        """Number of removed lines."""
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "del")

    @property
    def changed_lines(self) -> frozenset[int]:
        """New-side line numbers added by this change."""
        return frozenset(
            ln.new_no
            for h in self.hunks
            for ln in h.lines
            if ln.kind == "add" and ln.new_no is not None
        )

    @property
    def mode_only(self) -> bool:
        """Only the file mode changed: no hunks, not binary."""
        return not self.hunks and not self.binary and self.old_mode != self.new_mode


@dataclass(frozen=True, slots=True)
class ChangeSpec:
    """What the user asked to review."""

    mode: DiffMode
    commit: str | None = None
    from_ref: str | None = None
    to_ref: str | None = None
    diff_source: str | None = None  # "-" for stdin, or a file path
    context_lines: int = 3


@dataclass(frozen=True, slots=True)
class Change:
    """A resolved change. `snapshot_ref` is the ref tools read; None means the working tree."""

    spec: ChangeSpec
    repo_root: Path
    files: tuple[FileDiff, ...]
    base_sha: str | None = None
    head_sha: str | None = None
    snapshot_ref: str | None = None
    diff_sha256: str = ""
    warnings: tuple[str, ...] = field(default=())
