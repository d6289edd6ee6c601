"""Our unified-diff parser: `git diff` output and plain unified diffs (`diff -u`, `--no-prefix`)."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator

from reviewflow.errors import DiffParseError
from reviewflow.git.headers import FileHeader, merge_same_path, to_file_diff
from reviewflow.git.models import FileDiff, Hunk
from reviewflow.git.names import (
    binary_names,
    header_name,
    plain_names,
    split_git_header,
)
from reviewflow.git.quoting import unquote

# Extended header keywords of `diff --git` and the field each one sets.
_KEYWORDS = (
    ("old mode ", "old_mode"),
    ("new mode ", "new_mode"),
    ("deleted file mode ", "deleted_mode"),
    ("new file mode ", "created_mode"),
    ("similarity index ", "similarity"),
    ("dissimilarity index ", None),
    ("rename from ", "rename_from"),
    ("rename to ", "rename_to"),
    ("copy from ", "copy_from"),
    ("copy to ", "copy_to"),
    ("index ", "index"),
)


def iter_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Decode byte chunks (UTF-8, surrogateescape) and yield lines split on LF only."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    tail = ""
    for chunk in chunks:
        parts = (tail + decoder.decode(chunk)).split("\n")
        tail = parts.pop()
        yield from parts
    tail += decoder.decode(b"", final=True)
    if tail:
        yield tail


def parse_unified_diff(data: bytes | str) -> list[FileDiff]:
    """Parse `git diff` output or a plain unified diff into one FileDiff per path."""
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return parse_lines(lines)


def parse_lines(lines: Iterable[str]) -> list[FileDiff]:
    """Parse diff lines (without their LF) into one FileDiff per path."""
    return _Parser(lines).run()


def _fail(lineno: int, message: str) -> DiffParseError:
    return DiffParseError(f"malformed diff at line {lineno}: {message}")


class _Parser:
    __slots__ = ("_it", "_no", "_pending", "_starts")

    def __init__(self, lines: Iterable[str]) -> None:
        self._it = iter(lines)
        self._no = 0
        self._pending: str | None = None
        self._starts: list[int] = []

    def _next(self) -> str | None:
        line = self._pending
        if line is not None:
            self._pending = None
        else:
            line = next(self._it, None)
            if line is None:
                return None
        self._no += 1
        return line

    def _back(self, line: str) -> None:
        self._pending = line
        self._no -= 1

    def run(self) -> list[FileDiff]:
        """Read every file of the input."""
        files: list[FileDiff] = []
        content = False
        while (line := self._next()) is not None:
            if line.startswith("diff --git "):
                self._starts.append(self._no)
                files.append(self._git_file(line[11:]))
            elif line.startswith("--- "):
                self._starts.append(self._no)
                files.append(self._plain_file(line))
            elif line.startswith("Binary files ") and line.rstrip("\r").endswith(" differ"):
                self._starts.append(self._no)
                files.append(self._plain_binary(line.rstrip("\r")))
            elif line.startswith("@@"):
                raise _fail(self._no, "hunk header without a file header")
            content = content or bool(line.strip())
        if not files and content:
            raise _fail(1, "no file header found (not a unified diff)")
        return merge_same_path(files, self._starts)

    def _git_file(self, rest: str) -> FileDiff:
        head = FileHeader()
        try:
            head.old, head.new, head.prefixed = split_git_header(rest.rstrip("\r"))
        except ValueError as err:
            raise _fail(self._no, str(err)) from None
        hunks: list[Hunk] = []
        while (line := self._next()) is not None:
            if line.startswith("--- "):
                self._minus_plus(head, line)
                hunks = self._hunks()
                break
            if line.startswith("Binary files "):
                head.binary = True
                break
            if line.startswith("GIT binary patch"):
                head.binary = True
                self._skip_binary_patch()
                break
            if not self._keyword(head, line.rstrip("\r")):
                self._back(line)
                break
        return self._build(head, hunks)

    def _keyword(self, head: FileHeader, line: str) -> bool:
        for keyword, attr in _KEYWORDS:
            if line.startswith(keyword):
                if attr is None:
                    return True
                value = line[len(keyword) :]
                if attr in ("rename_from", "rename_to", "copy_from", "copy_to"):
                    try:
                        value = unquote(value)
                    except ValueError as err:
                        raise _fail(self._no, str(err)) from None
                setattr(head, attr, value)
                return True
        if line.startswith("+++ "):
            raise _fail(self._no, "'+++' line without a '---' line")
        return False

    def _minus_plus(self, head: FileHeader, minus_line: str) -> None:
        plus_line = self._next()
        if plus_line is None or not plus_line.startswith("+++ "):
            raise _fail(self._no, "'---' line not followed by a '+++' line")
        try:
            head.minus = header_name(minus_line[4:])
            head.plus = header_name(plus_line[4:])
        except ValueError as err:
            raise _fail(self._no, str(err)) from None
        head.has_minus = True

    def _plain_file(self, minus_line: str) -> FileDiff:
        head = FileHeader(git=False)
        self._minus_plus(head, minus_line)
        head.minus, head.plus = plain_names(head.minus, head.plus)
        return self._build(head, self._hunks())

    def _plain_binary(self, line: str) -> FileDiff:
        head = FileHeader(git=False, binary=True, has_minus=True)
        try:
            head.minus, head.plus = binary_names(line)
        except ValueError as err:
            raise _fail(self._no, str(err)) from None
        return self._build(head, [])

    def _skip_binary_patch(self) -> None:
        """Skip the base85 data of a `GIT binary patch` (forward and optional reverse)."""
        blocks = 0
        while (line := self._next()) is not None:
            if line.startswith(("literal ", "delta ")):
                blocks += 1
            elif line.strip() == "" and blocks >= 2:
                return
            elif line.startswith("diff --git "):
                self._back(line)
                return

    def _hunks(self) -> list[Hunk]:
        hunks: list[Hunk] = []
        while (line := self._next()) is not None:
            if line.startswith("@@ "):
                hunks.append(self._hunk(line))
                continue
            if line.startswith("@@@"):
                raise _fail(self._no, "combined (merge) diffs are not supported")
            if line[:1] in ("+", "-", " ") and not line.startswith("--- ") and line != "-- ":
                raise _fail(self._no, "diff line outside a hunk (hunk header counts too small?)")
            self._back(line)
            break
        return hunks

    def _hunk(self, header: str) -> Hunk:
        old_no, old_count, new_no, new_count, section = _hunk_header(header, self._no)
        out, self._no = _body(self._it, self._no, old_count, new_count)
        line = self._next()
        if line is not None and line.startswith("\\") and out:
            out.append(line)
        elif line is not None:
            self._back(line)
        context = sum(1 for raw in out if raw[:1] == " ")  # header counts are verified
        body = tuple(out)
        return Hunk(
            old_no,
            old_count,
            new_no,
            new_count,
            section,
            body,
            new_count - context,
            old_count - context,
        )

    def _build(self, head: FileHeader, hunks: list[Hunk]) -> FileDiff:
        try:
            return to_file_diff(head, tuple(hunks))
        except ValueError as err:
            raise _fail(self._starts[-1], str(err)) from None


def _body(it: Iterator[str], no: int, old_left: int, new_left: int) -> tuple[list[str], int]:
    """The raw body lines of one hunk and the last line number (the hot loop: no objects)."""
    out: list[str] = []
    append = out.append
    if old_left <= 0 and new_left <= 0:
        return out, no
    for line in it:
        first = line[:1]
        if first == " " or not line:
            append(line or " ")
            old_left -= 1
            new_left -= 1
            if old_left <= 0 or new_left <= 0:
                if old_left < 0 or new_left < 0:
                    raise _fail(no + len(out), "hunk has more lines than its header says")
                if old_left <= 0 and new_left <= 0:
                    return out, no + len(out)
        elif first == "+":
            append(line)
            new_left -= 1
            if new_left <= 0:
                if new_left < 0:
                    raise _fail(no + len(out), "hunk has more added lines than declared")
                if old_left <= 0:
                    return out, no + len(out)
        elif first == "-":
            append(line)
            old_left -= 1
            if old_left <= 0:
                if old_left < 0:
                    raise _fail(no + len(out), "hunk has more removed lines than declared")
                if new_left <= 0:
                    return out, no + len(out)
        elif first == "\\" and out:
            append(line)
        else:
            missing = f"{old_left} old and {new_left} new lines missing"
            raise _fail(no + len(out) + 1, f"hunk truncated: {missing}")
    missing = f"{old_left} old and {new_left} new lines missing"
    raise _fail(no + len(out), f"hunk truncated at end of input: {missing}")


# Line numbers and counts have at most 10 digits: a longer number is no real file's (and
# `int()` refuses strings over 4300 digits with a ValueError).
_HUNK_HEADER = re.compile(
    r"@@ -([0-9]{1,10})(?:,([0-9]{1,10}))? \+([0-9]{1,10})(?:,([0-9]{1,10}))? @@(.*)", re.DOTALL
)


def _hunk_header(line: str, lineno: int) -> tuple[int, int, int, int, str]:
    found = _HUNK_HEADER.match(line)
    if found is None:
        raise _fail(lineno, f"bad hunk header {line[:60]!r}")
    old_start, old_count, new_start, new_count, section = found.groups()
    return (
        int(old_start),
        1 if old_count is None else int(old_count),
        int(new_start),
        1 if new_count is None else int(new_count),
        section.rstrip("\r").removeprefix(" "),
    )
