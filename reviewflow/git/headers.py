"""From the header lines of one file to its FileDiff, replayed as `git apply` reads them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reviewflow.errors import DiffParseError
from reviewflow.git.models import FileDiff, FileStatus, Hunk
from reviewflow.git.names import (
    DEV_NULL,
    find_name,
    find_name_traditional,
    git_header_name,
    has_epoch_timestamp,
    is_dev_null,
)
from reviewflow.git.quoting import unquote_at

SYMLINK_MODE = "120000"

# Extended header keywords of `diff --git`, in the order Git matches them.
KEYWORDS = (
    "--- ",
    "+++ ",
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename old ",
    "rename new ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)
_MOVED_FROM = ("rename from ", "rename old ", "copy from ")
_MOVED_TO = ("rename to ", "rename new ", "copy to ")
_NAMED = frozenset(("--- ", "+++ ", *_MOVED_FROM, *_MOVED_TO))
_MODE = re.compile(r"[0-7]+(?=[ \t\r]|\Z)")
_INDEX = re.compile(r"[^.]{0,40}\.\.[^ ]{0,40}(?: (.*))?\Z", re.DOTALL)


def fail(lineno: int, message: str) -> DiffParseError:
    """The one-line error for a diff that cannot be read."""
    return DiffParseError(f"malformed diff at line {lineno}: {message}")


@dataclass(slots=True)
class FileHeader:
    """What the header lines of one file said, kept raw until the strip level is known."""

    start: int
    git: str | None = None  # the `diff --git ` line after the keyword; None for a plain diff
    lines: list[tuple[int, str, str]] = field(default_factory=list)  # (line, keyword, value)
    hunks: tuple[Hunk, ...] = ()
    binary: bool = False
    _defaults: dict[int, str | None] = field(default_factory=dict)

    def default_name(self, strip: int) -> str | None:
        """The name the `diff --git` line gives at `strip` (computed once per level)."""
        if strip not in self._defaults:
            assert self.git is not None
            self._defaults[strip] = git_header_name(self.git, strip)
        return self._defaults[strip]


@dataclass(slots=True)
class _Names:
    """Git's patch state while it reads one header."""

    default: str | None = None
    old: str | None = None
    new: str | None = None
    is_new: int = 0
    is_delete: int = 0
    rename: bool = False
    copy: bool = False
    modes: dict[str, str] = field(default_factory=dict)
    similarity: int | None = None


def _mode(lineno: int, value: str) -> str:
    found = _MODE.match(value)
    if found is None:
        raise fail(lineno, f"invalid file mode {value[:40]!r}")
    return found.group()


def _similarity(value: str) -> int | None:
    """The percentage of a `similarity index N%` line; None when it is not 0-100%."""
    digits = value[:-1]
    if not (value.endswith("%") and digits.isascii() and digits.isdigit() and len(digits) <= 3):
        return None
    number = int(digits)
    return number if number <= 100 else None


def _verify(state: _Names, lineno: int, value: str, strip: int, new_side: bool) -> None:
    """A `---`/`+++` line of a git diff agrees with what the header said before it."""
    isnull = state.is_delete if new_side else state.is_new
    current = state.new if new_side else state.old
    if current is None and not isnull:
        name = find_name(value, strip)
    elif current is not None:
        if isnull or find_name(value, strip) != current:
            raise fail(lineno, "the '---'/'+++' name disagrees with the 'diff --git' header")
        name = current
    else:
        if not is_dev_null(value):
            raise fail(lineno, "expected /dev/null in the '---'/'+++' line")
        name = None
    if new_side:
        state.new = name
    else:
        state.old = name


def _apply(state: _Names, lineno: int, key: str, value: str, strip: int) -> None:
    """One extended header line, as Git's gitdiff_* handlers read it."""
    if key == "--- " or key == "+++ ":
        _verify(state, lineno, value, strip, key == "+++ ")
    elif key == "index ":
        found = _INDEX.match(value)
        if found is not None and found.group(1) is not None:
            state.modes[key] = _mode(lineno, found.group(1))
    elif key == "similarity index ":
        state.similarity = _similarity(value)
    elif key == "old mode " or key == "new mode ":
        state.modes[key] = _mode(lineno, value)
    elif key != "dissimilarity index ":
        _extension(state, lineno, key, value, strip)


def _extension(state: _Names, lineno: int, key: str, value: str, strip: int) -> None:
    """A line that makes the file created, deleted, renamed or copied (at most one of them)."""
    if key == "deleted file mode ":
        state.is_delete, state.old = 1, state.default
        state.modes[key] = _mode(lineno, value)
    elif key == "new file mode ":
        state.is_new, state.new = 1, state.default
        state.modes[key] = _mode(lineno, value)
    else:
        name = find_name(value, strip - 1 if strip else 0, tab=False)
        if key in _MOVED_FROM:
            state.old = name
        else:
            state.new = name
        if key.startswith("copy"):
            state.copy = True
        else:
            state.rename = True
    if state.is_new + state.is_delete + state.rename + state.copy > 1:
        raise fail(lineno, "inconsistent header lines (a file both created, deleted or moved)")


def _quoting(head: FileHeader) -> None:
    """Refuse a name with broken C quoting (Git would read the quote as part of the name)."""
    for lineno, key, value in head.lines:
        if value.startswith('"') and key in _NAMED:
            try:
                unquote_at(value, 0)
            except ValueError as err:
                raise fail(lineno, str(err)) from None


def preferred_strip(head: FileHeader) -> int | None:
    """The `-p` level this file's names call for (1 for `a/` `b/`), None when either fits."""
    if head.git is not None:
        if head.default_name(0) is not None:
            return 0
        if head.default_name(1) is not None:
            return 1
        moved = _moved_strip(head)
        if moved is not None:
            return moved
        values = {key: value for _, key, value in head.lines}
        minus, plus = values.get("--- ", DEV_NULL), values.get("+++ ", DEV_NULL)
        old = None if is_dev_null(minus) else find_name(minus, 0)
        new = None if is_dev_null(plus) else find_name(plus, 0)
    else:
        (_, _, minus), (_, _, plus) = head.lines
        old = None if is_dev_null(minus) else find_name_traditional(minus, None, 0)
        new = None if is_dev_null(plus) else find_name_traditional(plus, None, 0)
    return _pair_strip(old, new)


def _pair_strip(old: str | None, new: str | None) -> int | None:
    """1 when the two names differ only in their first component (`a/x`, `b/x`), else 0."""
    if old is not None and new is not None:
        if old == new:
            return 0
        old_parts, new_parts = old.split("/", 1), new.split("/", 1)
        return 1 if len(old_parts) == len(new_parts) == 2 and old_parts[1] == new_parts[1] else 0
    name = old if old is not None else new
    if name is None:
        return None
    if name.startswith(("a/", "b/")):
        return 1
    return None if "/" in name else 0


def _moved_strip(head: FileHeader) -> int | None:
    """A rename's `---` name equals its `rename from` name with or without one component."""
    values = {key: value for _, key, value in head.lines}
    for side, keys in (("--- ", _MOVED_FROM), ("+++ ", _MOVED_TO)):
        value = values.get(side)
        moved = next((values[key] for key in keys if key in values), None)
        if value is None or moved is None or is_dev_null(value):
            continue
        target = find_name(moved, 0, tab=False)
        for strip in (0, 1):
            if find_name(value, strip) == target:
                return strip
    return None


def _git_names(head: FileHeader, strip: int) -> _Names:
    assert head.git is not None
    state = _Names(default=head.default_name(strip))
    for lineno, key, value in head.lines:
        _apply(state, lineno, key, value, strip)
    if state.old is None and state.new is None:
        if state.default is None:
            raise fail(head.start, "cannot tell the file name from the 'diff --git' header")
        state.old = state.new = state.default
    if (state.new is None and not state.is_delete) or (state.old is None and not state.is_new):
        raise fail(head.start, "cannot tell the file name from the 'diff --git' header")
    return state


def _plain_names(head: FileHeader, strip: int) -> _Names:
    (_, _, minus), (_, _, plus) = head.lines
    state = _Names(is_new=-1, is_delete=-1)
    if is_dev_null(minus) and is_dev_null(plus):
        name = None  # Git would read `dev/null` at -p1
    elif is_dev_null(minus):
        state.is_new, state.is_delete = 1, 0
        name = state.new = find_name_traditional(plus, None, strip)
    elif is_dev_null(plus):
        state.is_new, state.is_delete = 0, 1
        name = state.old = find_name_traditional(minus, None, strip)
    else:
        first = find_name_traditional(minus, None, strip)
        name = find_name_traditional(plus, first, strip)
        if has_epoch_timestamp(minus):
            state.is_new, state.is_delete, state.new = 1, 0, name
        elif has_epoch_timestamp(plus):
            state.is_new, state.is_delete, state.old = 0, 1, name
        else:
            state.old = state.new = name
    if name is None:
        raise fail(head.start, "cannot tell the file name from the '---'/'+++' lines")
    return state


def _check_contents(head: FileHeader, state: _Names) -> None:
    """Git's checks: a created file has no old lines, a deleted one no new lines."""
    if state.is_new == 1 and any(h.old_count for h in head.hunks):
        raise fail(head.start, "a new file with lines of an old one")
    if state.is_delete == 1 and any(h.new_count for h in head.hunks):
        raise fail(head.start, "a deleted file that still has lines")


def _status(state: _Names) -> FileStatus:
    if state.rename:
        return FileStatus.RENAMED
    if state.copy:
        return FileStatus.COPIED
    if state.is_new == 1:
        return FileStatus.ADDED
    if state.is_delete == 1:
        return FileStatus.DELETED
    return FileStatus.MODIFIED


def to_file_diff(head: FileHeader, strip: int) -> FileDiff:
    """The FileDiff one file's header and hunks describe, names read at `strip` (`-p`)."""
    _quoting(head)
    state = _git_names(head, strip) if head.git is not None else _plain_names(head, strip)
    _check_contents(head, state)
    path = state.new if state.new is not None else state.old
    assert path is not None
    status = _status(state)
    old_path = None if status == FileStatus.ADDED else state.old
    if "\0" in path or (old_path is not None and "\0" in old_path):
        raise fail(head.start, "NUL byte in a file name")  # no file system (nor git) allows one
    modes = state.modes
    index_mode = modes.get("index ")
    old_mode = modes.get("old mode ") or modes.get("deleted file mode ") or index_mode
    new_mode = modes.get("new mode ") or modes.get("new file mode ") or index_mode
    if status == FileStatus.ADDED:
        old_mode = None
    elif status == FileStatus.DELETED:
        new_mode = None
    link_mode = old_mode if status == FileStatus.DELETED else new_mode
    return FileDiff(
        path=path,
        old_path=old_path,
        status=status,
        binary=head.binary,
        old_mode=old_mode,
        new_mode=new_mode,
        similarity=state.similarity if status in (FileStatus.RENAMED, FileStatus.COPIED) else None,
        hunks=head.hunks,
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
        if {first.status, diff.status} != {FileStatus.ADDED, FileStatus.DELETED}:
            raise fail(
                starts[number] if starts else 0,
                f"path {diff.path!r} appears twice (a patch series, as `git format-patch"
                " --stdout` or `git log -p` write?): review the range with --from A --to B,"
                " or pipe `git diff A..B`",
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
