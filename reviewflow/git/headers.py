"""From the header lines of one file to its FileDiff; one FileDiff per path."""

from __future__ import annotations

from dataclasses import dataclass

from reviewflow.errors import DiffParseError
from reviewflow.git.models import FileDiff, FileStatus, Hunk
from reviewflow.git.names import strip_prefix

SYMLINK_MODE = "120000"


@dataclass(slots=True)
class FileHeader:
    """What the header lines of one file said, before it becomes a FileDiff."""

    old: str | None = None
    new: str | None = None
    prefixed: bool = True
    git: bool = True
    old_mode: str | None = None
    new_mode: str | None = None
    deleted_mode: str | None = None
    created_mode: str | None = None
    similarity: str | None = None
    rename_from: str | None = None
    rename_to: str | None = None
    copy_from: str | None = None
    copy_to: str | None = None
    index: str | None = None
    minus: str | None = None
    plus: str | None = None
    has_minus: bool = False
    binary: bool = False


def _status(head: FileHeader) -> tuple[FileStatus, str | None, str | None]:
    """(status, path, old path) of one header."""
    old = strip_prefix(head.minus, head.prefixed) if head.git else head.minus
    new = strip_prefix(head.plus, head.prefixed) if head.git else head.plus
    if not head.has_minus:
        old, new = head.old, head.new
    if head.rename_from is not None and head.rename_to is not None:
        return FileStatus.RENAMED, head.rename_to, head.rename_from
    if head.copy_from is not None and head.copy_to is not None:
        return FileStatus.COPIED, head.copy_to, head.copy_from
    if head.created_mode is not None or (head.has_minus and old is None):
        path = new if new is not None else head.new
        return FileStatus.ADDED, path, None
    if head.deleted_mode is not None or (head.has_minus and new is None):
        path = old if old is not None else head.old
        return FileStatus.DELETED, path, path
    path = new if new is not None else old
    return FileStatus.MODIFIED, path, old if head.git and old is not None else path


def _similarity(value: str | None) -> int | None:
    """The percentage of a `similarity index N%` line; None when it is not 0-100%."""
    if value is None or not value.endswith("%"):
        return None
    digits = value[:-1]
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 3):
        return None
    number = int(digits)
    return number if number <= 100 else None


def to_file_diff(head: FileHeader, hunks: tuple[Hunk, ...]) -> FileDiff:
    """The FileDiff one file's header and hunks describe (ValueError without a name)."""
    status, path, old_path = _status(head)
    if not path:
        raise ValueError("cannot tell the file name from the file header")
    if "\0" in path or (old_path is not None and "\0" in old_path):
        raise ValueError("NUL byte in a file name")  # no file system (nor git) allows one
    index_mode = None
    if head.index is not None:
        _, _, index_mode = head.index.partition(" ")
    old_mode = head.old_mode or head.deleted_mode or index_mode or None
    new_mode = head.new_mode or head.created_mode or index_mode or None
    if status == FileStatus.ADDED:
        old_mode = None
    elif status == FileStatus.DELETED:
        new_mode = None
    similarity = _similarity(head.similarity)
    link_mode = old_mode if status == FileStatus.DELETED else new_mode
    return FileDiff(
        path=path,
        old_path=old_path,
        status=status,
        binary=head.binary,
        old_mode=old_mode,
        new_mode=new_mode,
        similarity=similarity,
        hunks=hunks,
        is_symlink=link_mode == SYMLINK_MODE,
    )


def merge_same_path(files: list[FileDiff], starts: list[int] | None = None) -> list[FileDiff]:
    """One FileDiff per path: a deletion and an addition of one path (a type change) merge."""
    seen: dict[str, int] = {}
    out: list[FileDiff] = []
    for number, diff in enumerate(files):
        where = seen.get(diff.path)
        if where is None:
            seen[diff.path] = len(out)
            out.append(diff)
            continue
        first = out[where]
        statuses = {first.status, diff.status}
        if statuses != {FileStatus.ADDED, FileStatus.DELETED}:
            line = starts[number] if starts else 0
            raise DiffParseError(
                f"malformed diff at line {line}: path {diff.path!r} appears twice in the diff"
            )
        gone, came = (first, diff) if first.status == FileStatus.DELETED else (diff, first)
        out[where] = FileDiff(
            path=diff.path,
            old_path=diff.path,
            status=FileStatus.MODIFIED,
            binary=gone.binary or came.binary,
            old_mode=gone.old_mode,
            new_mode=came.new_mode,
            hunks=gone.hunks + came.hunks,
            is_symlink=came.is_symlink,
        )
    return out
