"""The base85 data of a `GIT binary patch`, checked as `git apply` checks it."""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable

_SIZE = re.compile(r"[ \t\n\r\v\f]*\+?([0-9]+)")
_MAX_SIZE = 1 << 30


def _length(row: str) -> int | None:
    """Bytes one data line holds (its first letter), None when the line cannot be one."""
    if len(row) < 6 or (len(row) - 1) % 5:
        return None
    first = row[0]
    if "A" <= first <= "Z":
        size = ord(first) - ord("A") + 1
    elif "a" <= first <= "z":
        size = ord(first) - ord("a") + 27
    else:
        return None
    most = (len(row) - 1) // 5 * 4
    return size if most - 4 < size <= most else None


def _decode(row: str) -> bytes | None:
    size = _length(row)
    if size is None:
        return None
    try:
        return base64.b85decode(row[1:].encode("ascii"))[:size]
    except (ValueError, UnicodeEncodeError):
        return None


def _inflates_to(data: bytes, size: int) -> bool:
    stream = zlib.decompressobj()
    try:
        out = stream.decompress(data, size + 1)
    except zlib.error:
        return False
    return stream.eof and len(out) == size


def read_binary_hunk(first: str, next_line: Callable[[], str | None]) -> str | None:
    """Check one `literal N`/`delta N` block after its first line; None, or what is wrong."""
    found = _SIZE.match(first.partition(" ")[2])
    digits = found.group(1) if found else "0"
    size = int(digits) if len(digits) <= 10 else _MAX_SIZE + 1
    if size > _MAX_SIZE:
        return "binary patch too large"
    data = bytearray()
    while (row := next_line()) is not None:
        if row == "":
            return None if _inflates_to(bytes(data), size) else "corrupt binary patch"
        chunk = _decode(row)
        if chunk is None:
            return "corrupt binary patch"
        data += chunk
    return "binary patch truncated at end of input"
