"""Our unified-diff parser: reads a diff as `git apply` does (`git diff`, `diff -u`, `--no-prefix`).

The files and added/removed counts we read are the ones `git apply --numstat` reads from the
same bytes at the strip level the names call for (`-p1` for `a/` `b/`, `-p0` otherwise), or the
input is refused with the line number. Text between patches (mail headers, commit messages) is
skipped as Git skips it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from reviewflow.errors import DiffParseError
from reviewflow.git.binary import read_binary_hunk
from reviewflow.git.headers import (
    KEYWORDS,
    FileHeader,
    fail,
    merge_same_path,
    preferred_strip,
    to_file_diff,
)
from reviewflow.git.models import FileDiff, Hunk

_COLOUR = "the diff has ANSI colour codes (color.ui=always?): produce it with `git diff --no-color`"
_MIXED = "the diff mixes prefixed (a/ b/) and unprefixed file names: pipe one diff at a time"
_BINARY = ("Binary files ", "Files ")
_WORD_DIFF = "this looks like a word diff (--word-diff): pipe a plain `git diff`"


@dataclass(frozen=True, slots=True)
class ParsedDiff:
    """The files of a diff and the strip level (`git apply -p`) their names were read at."""

    files: list[FileDiff]
    strip: int


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


def read_diff(data: bytes | str) -> ParsedDiff:
    """Parse `git diff` output or a plain unified diff, with the strip level it was read at."""
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return _Parser(lines).run()


def parse_unified_diff(data: bytes | str) -> list[FileDiff]:
    """Parse `git diff` output or a plain unified diff into one FileDiff per path."""
    return read_diff(data).files


def parse_lines(lines: Iterable[str]) -> list[FileDiff]:
    """Parse diff lines (without their LF) into one FileDiff per path."""
    return _Parser(lines).run().files


_BY_START: dict[str, list[str]] = {}
for _word in KEYWORDS:
    _BY_START.setdefault(_word[:4], []).append(_word)


def _keyword(line: str) -> str | None:
    for keyword in _BY_START.get(line[:4], ()):
        if line.startswith(keyword):
            return keyword
    return None


def _choose_strip(heads: list[FileHeader]) -> int:
    """One `-p` level for the whole input, as Git applies one; a mix is refused."""
    chosen: int | None = None
    for head in heads:
        strip = preferred_strip(head)
        if strip is None:
            continue
        if chosen is not None and strip != chosen:
            raise fail(head.start, _MIXED)
        chosen = strip
    return 1 if chosen is None else chosen


class _Parser:
    __slots__ = ("_it", "_no", "_pending")

    def __init__(self, lines: Iterable[str]) -> None:
        self._it = iter(lines)
        self._no = 0
        self._pending: list[str] = []

    def _next(self) -> str | None:
        if self._pending:
            line: str | None = self._pending.pop()
        else:
            line = next(self._it, None)
            if line is None:
                return None
        self._no += 1
        return line

    def _back(self, line: str | None) -> None:
        if line is not None:
            self._pending.append(line)
            self._no -= 1

    def run(self) -> ParsedDiff:
        """Read every file of the input."""
        heads: list[FileHeader] = []
        content = False
        while (line := self._next()) is not None:
            head = None
            if line.startswith("diff --git "):
                head = self._git_file(line[11:])
            elif line.startswith("--- ") and len(line) > 4:  # Git skips lines under 6 bytes
                head = self._plain_file(line)
            elif line.startswith("@@ -"):
                raise fail(self._no, "hunk header without a file header")
            elif line.startswith("\x1b["):
                raise fail(self._no, _COLOUR)
            if head is not None:
                heads.append(head)
            content = content or bool(line.strip())
        if not heads and content:
            raise fail(1, "no file header found (not a unified diff)")
        strip = _choose_strip(heads)
        files = [to_file_diff(head, strip) for head in heads]
        return ParsedDiff(merge_same_path(files, [head.start for head in heads]), strip)

    def _git_file(self, rest: str) -> FileHeader:
        """A `diff --git` file."""
        head = FileHeader(self._no, git=rest)
        while (line := self._next()) is not None:
            keyword = _keyword(line)
            if keyword is None:
                self._back(line)
                break
            head.lines.append((self._no, keyword, line[len(keyword) :]))
        if not head.lines:
            # Git skips the line but keeps its names for the next header: refuse instead.
            raise fail(head.start, "a 'diff --git' line without the header lines that follow it")
        head.hunks = self._hunks()
        if not head.hunks:
            head.binary = self._binary()
        return head

    def _plain_file(self, minus: str) -> FileHeader | None:
        """A `---`, `+++`, `@@ -` file; None when the lines do not follow (text, for Git)."""
        start = self._no
        plus = self._next()
        if plus is None or not plus.startswith("+++ "):
            self._back(plus)
            return None
        third = self._next()
        self._back(third)
        if third is None or not third.startswith("@@ -"):
            return None
        head = FileHeader(start, lines=[(start, "--- ", minus[4:]), (start + 1, "+++ ", plus[4:])])
        head.hunks = self._hunks()
        return head

    def _binary(self) -> bool:
        line = self._next()
        if line == "GIT binary patch":
            self._binary_patch()
            return True
        if line is not None and line.endswith(" differ") and line.startswith(_BINARY):
            return True
        self._back(line)
        return False

    def _binary_patch(self) -> None:
        """The forward block of a `GIT binary patch` and its optional reverse block."""
        for required in (True, False):
            line = self._next()
            if line is None or not line.startswith(("literal ", "delta ")):
                if required:
                    raise fail(self._no, "unrecognized binary patch")
                self._back(line)
                return
            problem = read_binary_hunk(line, self._next)
            if problem is not None:
                raise fail(self._no, problem)

    def _hunks(self) -> tuple[Hunk, ...]:
        hunks: list[Hunk] = []
        while (line := self._next()) is not None:
            if line.startswith("@@ "):
                hunks.append(self._hunk(line))
                continue
            if line.startswith("@@@"):
                raise fail(self._no, "combined (merge) diffs are not supported")
            if _stray(line):
                raise fail(self._no, "diff line outside a hunk (hunk header counts too small?)")
            self._back(line)
            break
        return tuple(hunks)

    def _hunk(self, header: str) -> Hunk:
        old_no, old_count, new_no, new_count, section = _hunk_header(header, self._no)
        out, added, removed = _body(self._it, self._no, old_count, new_count)
        self._no += len(out)
        line = self._next()
        if line is not None and line.startswith("\\ "):
            out.append(line)
        else:
            self._back(line)
        return Hunk(old_no, old_count, new_no, new_count, section, tuple(out), added, removed)


def _stray(line: str) -> bool:
    """A diff line right after a hunk: its header counts were too small (or a lost header)."""
    if not line or line[0] not in "+- ":
        return False
    return not line.startswith("--- ") and line not in ("-- ", "-- \r")  # a mail signature


def _bad_line(line: str, lineno: int, missing: str) -> DiffParseError:
    if line.startswith("\x1b"):
        return fail(lineno, _COLOUR)
    if "[-" in line or "{+" in line:
        return fail(lineno, _WORD_DIFF)
    if line.startswith("\\"):
        return fail(lineno, "bad '\\ No newline at end of file' line")
    return fail(lineno, f"hunk truncated: {missing}")


def _body(it: Iterator[str], no: int, old_left: int, new_left: int) -> tuple[list[str], int, int]:
    """The raw body lines of one hunk and the number of `+` lines (the hot loop: no objects)."""
    out: list[str] = []
    append = out.append
    adds = dels = 0
    for line in it:
        first = line[:1]
        if first == " " or not line:
            append(line or " ")
            old_left -= 1
            new_left -= 1
        elif first == "+":
            append(line)
            new_left -= 1
            adds += 1
        elif first == "-":
            append(line)
            old_left -= 1
            dels += 1
        elif first == "\\" and line.startswith("\\ ") and len(line) >= 11:
            append(line)
            continue
        else:
            missing = f"{old_left} old and {new_left} new lines missing"
            raise _bad_line(line, no + len(out) + 1, missing)
        if old_left <= 0 or new_left <= 0:
            if old_left < 0 or new_left < 0:
                raise fail(no + len(out), "hunk has more lines than its header says")
            if old_left == 0 and new_left == 0:
                if not adds and not dels:
                    raise fail(no + 1, "hunk without an added or removed line")
                return out, adds, dels
    missing = f"{old_left} old and {new_left} new lines missing"
    raise fail(no + len(out), f"hunk truncated at end of input: {missing}")


# Line numbers and counts have at most 10 digits: a longer number is no real file's (and
# `int()` refuses strings over 4300 digits with a ValueError).
_HUNK_HEADER = re.compile(
    r"@@ -([0-9]{1,10})(?:,([0-9]{1,10}))? \+([0-9]{1,10})(?:,([0-9]{1,10}))? @@(.*)", re.DOTALL
)


def _hunk_header(line: str, lineno: int) -> tuple[int, int, int, int, str]:
    found = _HUNK_HEADER.match(line)
    if found is None:
        raise fail(lineno, f"bad hunk header {line[:60]!r}")
    old_start, old_count, new_start, new_count, section = found.groups()
    old, new = (
        1 if old_count is None else int(old_count),
        1 if new_count is None else int(new_count),
    )
    if old == 0 and new == 0:
        raise fail(lineno, "hunk header with no lines")
    return int(old_start), old, int(new_start), new, section.rstrip("\r").removeprefix(" ")
