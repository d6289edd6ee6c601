"""How a changed file's bytes become text: the encoding Git's attributes or the file itself
declare, else UTF-8 with replacement characters, and the note that says which.

Git hands diffs over as bytes; `parse` keeps bytes that are not UTF-8 as surrogates
(`surrogateescape`), so nothing is lost until here. A file whose text is valid UTF-8 is read as
UTF-8. Any other is decoded once, line by line, with the first of: its `encoding` or
`working-tree-encoding` attribute (`.gitattributes`), a coding line in its first two lines
(`# -*- coding: latin-1 -*-`, `<?xml ... encoding="..."?>`, PEP 263's form in any comment
style); else as UTF-8 with each invalid byte replaced by U+FFFD, and a note says so. Only
encodings that keep ASCII as it is (Latin-1, Windows-1252, Shift JIS, ...) are used line by
line; a declared UTF-16 or unknown name is noted and the UTF-8 reading is kept.

Names are not decoded: a name's bytes that are not UTF-8 are shown as `\\xNN` (`shown`), the
form the reports, the model and the console get, and `from_shown` reads back for Git.
"""

from __future__ import annotations

import codecs
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from reviewflow.errors import GitError
from reviewflow.git.models import FileDiff, FileStatus, Hunk
from reviewflow.git.runner import run_git

_COOKIE = re.compile(
    r"^[ \t\f]*(?:#|//|/\*|--|;|%|<!--|<\?xml\b|\.\.|\").*?coding[:=][ \t]*[\"']?([-\w.]+)"
)
_SHOWN_BYTE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")
_ATTRIBUTES = ("encoding", "working-tree-encoding")
_NOT_SET = frozenset({"unspecified", "unset", "set"})
_BATCH = 200
_PROBE = 4096

Note = tuple[str, str]
"""A path and what its reading needs the user to know."""


def is_utf8(text: str) -> bool:
    """Whether `text` (read with surrogate escapes) was valid UTF-8."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path: str) -> str:
    """A name as the user reads it: bytes that are not UTF-8 as `\\xNN`."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def from_shown(text: str) -> str:
    """A name the user or the model wrote as shown (`\\xNN` for bytes 80-FF) as Git names it."""
    if "\\x" not in text:
        return text
    return _SHOWN_BYTE.sub(lambda found: chr(0xDC00 + int(found.group(1), 16)), text)


def codec_for(name: str) -> str | None:
    """The codec `name` names if it reads text line by line as ASCII does, else None."""
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    try:
        same = "\n#coding:=-_.".encode(codec) == b"\n#coding:=-_."
    except (UnicodeError, LookupError, TypeError):
        return None
    return codec if same else None


def coding_line(lines: Iterable[str]) -> str | None:
    """The encoding a coding line among the first two `lines` names, as written (or None)."""
    for number, line in enumerate(lines):
        if number >= 2:
            break
        found = _COOKIE.match(line)
        if found:
            return found.group(1)
    return None


def decode_text(
    data: bytes, attribute: Callable[[], str | None] = lambda: None
) -> tuple[str, str | None]:
    """A file's bytes as text, as its diff is read: UTF-8; else the codec its `attribute`
    (asked only then) or its coding line names; else UTF-8 with U+FFFD for each invalid byte.
    With the codec used (None: replaced)."""
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    declared = attribute()
    codec = codec_for(declared) if declared else None
    if codec is not None:
        return data.decode(codec, "replace"), codec
    named = coding_line(data[:_PROBE].decode("latin-1").splitlines())
    codec = codec_for(named) if named else None
    if codec is not None:
        return data.decode(codec, "replace"), codec
    return data.decode("utf-8", "replace"), None


def _redecode(text: str, codec: str) -> str:
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode(codec, "replace")


def _hunk_text(hunk: Hunk) -> Iterable[str]:
    yield hunk.section
    yield from hunk.body


def needs_decoding(diff: FileDiff) -> bool:
    """Whether any of the file's diff text is not valid UTF-8."""
    return any(not is_utf8(text) for hunk in diff.hunks for text in _hunk_text(hunk))


def decoded_file(diff: FileDiff, codec: str) -> FileDiff:
    """`diff` with its hunks' text read as `codec` (invalid bytes as U+FFFD)."""
    hunks = tuple(
        replace(
            hunk,
            section=_redecode(hunk.section, codec),
            body=tuple(_redecode(line, codec) for line in hunk.body),
            _lines=[],
        )
        for hunk in diff.hunks
    )
    return replace(diff, hunks=hunks)


def _first_lines(diff: FileDiff) -> list[str] | None:
    """The file's first two lines if its hunks hold them (new side; old side if deleted)."""
    side = "-" if diff.status is FileStatus.DELETED else "+"
    for hunk in diff.hunks:
        start = hunk.old_start if side == "-" else hunk.new_start
        if start <= 1:
            keep = (side, " ")
            return [line[1:] for line in hunk.body if line[:1] in keep][:2]
    return None


def declared_codec(
    diff: FileDiff, attribute: str | None, head: Callable[[FileDiff], bytes]
) -> tuple[str | None, str]:
    """The codec `diff`'s file declares (or None) and the note on how it was read."""
    name = shown(diff.path)
    if attribute is not None:
        codec = codec_for(attribute)
        if codec is not None:
            return codec, ""
        return None, _replaced(name, f"its encoding attribute '{attribute}' is not usable here")
    lines = _first_lines(diff)
    if lines is None:
        lines = head(diff).decode("latin-1").splitlines()
    named = coding_line(lines)
    if named is None:
        return None, _replaced(name, "it declares no encoding")
    codec = codec_for(named)
    if codec is None:
        return None, _replaced(name, f"its coding line names '{named}', not usable here")
    return codec, ""


def _replaced(name: str, why: str) -> str:
    return (
        f"{name}: not valid UTF-8 and {why}: reviewed as UTF-8 with each invalid byte shown "
        "as U+FFFD (declare it with a .gitattributes `encoding` or a coding line)"
    )


def named(diff: FileDiff) -> FileDiff:
    """`diff` with its names as shown (`shown`): the form every later stage, report and
    request holds; `reviewflow.review.reader` reads a shown name back for Git."""
    old = None if diff.old_path is None else shown(diff.old_path)
    if is_utf8(diff.path) and (diff.old_path is None or is_utf8(diff.old_path)):
        return diff
    return replace(diff, path=shown(diff.path), old_path=old)


def decode_files(
    files: Sequence[FileDiff],
    attributes: Callable[[list[str]], dict[str, str]],
    head: Callable[[FileDiff], bytes],
) -> tuple[list[FileDiff], list[Note]]:
    """Every file of a change with its text decoded and its names as shown (`named`), and a
    note per file read with replacement characters. `attributes` gives the declared encoding
    of the paths that need one, `head` the first bytes of a file whose hunks do not hold its
    first lines."""
    todo = [i for i, diff in enumerate(files) if needs_decoding(diff)]
    if not todo:
        return [named(diff) for diff in files], []
    declared = attributes([files[i].path for i in todo])
    out = list(files)
    notes: list[Note] = []
    for i in todo:
        diff = files[i]
        codec, note = declared_codec(diff, declared.get(diff.path), head)
        out[i] = decoded_file(diff, codec or "utf-8")
        if note:
            notes.append((shown(diff.path), note))
    return [named(diff) for diff in out], notes


def read_attributes(root: Path, paths: list[str], tree: str | None = None) -> dict[str, str]:
    """The `encoding` (else `working-tree-encoding`) attribute of each of `paths` that has
    one: from the working tree's `.gitattributes`, or with `tree`, from that tree's."""
    if tree is None:
        return _check_attributes(root, paths, [], None)
    with tempfile.TemporaryDirectory(prefix="reviewflow-attr-") as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        try:
            run_git(root, ["read-tree", "--end-of-options", tree], env=env)
        except GitError:
            return {}
        return _check_attributes(root, paths, ["--cached"], env)


def _check_attributes(
    root: Path, paths: list[str], flags: list[str], env: dict[str, str] | None
) -> dict[str, str]:
    found: dict[str, str] = {}
    for start in range(0, len(paths), _BATCH):
        batch = paths[start : start + _BATCH]
        args = ["check-attr", "-z", *flags, *_ATTRIBUTES, "--", *batch]
        try:
            out = run_git(root, args, env=env)
        except GitError:
            return found
        fields = [os.fsdecode(part) for part in out.split(b"\0")]
        for path, attribute, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
            if value not in _NOT_SET and (attribute == "encoding" or path not in found):
                found[path] = value
    return found


def read_head(root: Path, old: str | None, new: str | None) -> Callable[[FileDiff], bytes]:
    """The first bytes of a changed file: from commit `new` (`old` for a deleted file), or
    from the working tree when `new` is None."""

    def head(diff: FileDiff) -> bytes:
        ref = old if diff.status is FileStatus.DELETED else new
        try:
            if ref is None:
                with open(root / diff.path, "rb") as handle:
                    return handle.read(_PROBE)
            return run_git(root, ["cat-file", "blob", f"{ref}:{diff.path}"])[:_PROBE]
        except (OSError, GitError):
            return b""

    return head
