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
    AUDIT = "audit"
    """No diff: the files as they are, each read as wholly added (`reviewflow.git.audit`)."""


LineKind = Literal["context", "add", "del"]
NO_NEWLINE_MARKER = "\\ No newline at end of file"


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
    """One hunk. `body` holds the raw lines (` `, `+`, `-` and `\\` markers); `lines` parses them.

    Parsing of line objects is deferred: the front half only needs counts, and a
    5,000-file change holds hundreds of thousands of lines.
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    body: tuple[str, ...]
    added: int
    removed: int
    _lines: list[tuple[DiffLine, ...]] = field(default_factory=list, compare=False, repr=False)

    @property
    def lines(self) -> tuple[DiffLine, ...]:
        """The body as DiffLines with old/new line numbers (built once, on first use)."""
        if not self._lines:
            self._lines.append(_number_lines(self.old_start, self.new_start, self.body))
        return self._lines[0]


def _number_lines(old_no: int, new_no: int, body: tuple[str, ...]) -> tuple[DiffLine, ...]:
    out: list[DiffLine] = []
    for raw in body:
        first = raw[:1]
        if first == "+":
            out.append(DiffLine("add", raw[1:], None, new_no))
            new_no += 1
        elif first == "-":
            out.append(DiffLine("del", raw[1:], old_no, None))
            old_no += 1
        elif first == "\\":
            if out:
                last = out[-1]
                out[-1] = DiffLine(last.kind, last.text, last.old_no, last.new_no, True)
        else:
            out.append(DiffLine("context", raw[1:], old_no, new_no))
            old_no += 1
            new_no += 1
    return tuple(out)


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
    unread_bytes: int | None = None
    """Set for a file too large to read (untracked files only): its size in bytes."""

    @property
    def added(self) -> int:
        """Number of added lines."""
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        """Number of removed lines."""
        return sum(h.removed for h in self.hunks)

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
    paths: tuple[str, ...] = ()
    """An audit's paths (files or directories: absolute, or relative to the repository's top);
    none: every file. With `commit`, the audit reads that commit's tree, else the working tree."""


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
    encoding_notes: tuple[tuple[str, str], ...] = field(default=())
    """(path, note) for each file whose text was not UTF-8 and declared no usable encoding."""
