"""File names in diff headers, read as `git apply` reads them at a strip level (`-p0`, `-p1`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from reviewflow.git.quoting import unquote_at

DEV_NULL = "/dev/null"
SPACE = " \t\n\r"  # Git's own isspace(): no \v, no \f


def is_dev_null(value: str) -> bool:
    """`/dev/null` followed by whitespace or the end of the line."""
    return value.startswith(DEV_NULL) and (len(value) == 9 or value[9] in SPACE)


def _squash(name: str | None) -> str | None:
    """Runs of slashes become one (Git's squash_slash)."""
    if name is None:
        return None
    return re.sub("/+", "/", name) if "//" in name else name


def _gnu(value: str, strip: int) -> str | None:
    """A C-quoted name with `strip` leading components removed; None if it cannot be read."""
    try:
        name, _ = unquote_at(value, 0)
    except ValueError:
        return None
    pos = 0
    for _ in range(strip):
        pos = name.find("/", pos)
        if pos < 0:
            return None
        pos += 1
    return _squash(name[pos:])


def _common(value: str, default: str | None, strip: int, end: int | None, tab: bool) -> str | None:
    """Git's find_name_common: the name after `strip` slashes, up to `end` or whitespace."""
    if end is None:  # a TAB (when `tab`) or a CR ends the name; spaces do not
        end = len(value)
        for stop in ("\t", "\r") if tab else ("\r",):
            pos = value.find(stop, 0, end)
            if pos >= 0:
                end = pos
    start = 0
    for _ in range(strip):
        pos = value.find("/", start, end)
        if pos < 0:
            return _squash(default)
        start = pos + 1
    if start == end:
        return _squash(default)
    name = value[start:end]
    if default is not None and len(default) < len(name) and name.startswith(default):
        return _squash(default)
    return _squash(name)


def find_name(value: str, strip: int, tab: bool = True) -> str | None:
    """The name of a `---`/`+++` line of a git diff (`tab`) or of a rename/copy line."""
    if value.startswith('"'):
        name = _gnu(value, strip)
        if name is not None:
            return name
    return _common(value, None, strip, None, tab)


def find_name_traditional(value: str, default: str | None, strip: int) -> str | None:
    """The name of a `---`/`+++` line of a plain diff: a timestamp after it is cut."""
    if value.startswith('"'):
        name = _gnu(value, strip)
        if name is not None:
            return name
    date = timestamp_len(value)
    if not date:
        return _common(value, default, strip, None, True)
    return _common(value, default, strip, len(value) - date, False)


_TZ = re.compile(r" [+-][0-9]{4}\Z")
_TZ_COLON = re.compile(r" [+-][0-9]{2}:[0-9]{2}\Z")
_TIME = re.compile(r" [0-9]{2}:[0-9]{2}:[0-9]{2}\Z")
_FRACTION = re.compile(r" [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+\Z")
_DATE = re.compile(r"(?:[0-9]{2})?[0-9]{2}-[0-9]{2}-[0-9]{2}\Z")


def _suffix(pattern: re.Pattern[str], text: str, end: int) -> int:
    found = pattern.search(text, 0, end)
    return end - found.start() if found else 0


def timestamp_len(value: str) -> int:
    """Length of the ` 2010-07-05 19:41:17.62 -0500` at the end (with its TAB or spaces)."""
    if not value or not "0" <= value[-1] <= "9":
        return 0
    end = len(value)
    end -= _suffix(_TZ, value, end) or _suffix(_TZ_COLON, value, end)
    end -= _suffix(_TIME, value, end) or _suffix(_FRACTION, value, end)
    date = _suffix(_DATE, value, end)
    if not date:
        return 0
    end -= date
    if end == 0 or value[end - 1] not in "\t ":
        return 0
    if value[end - 1] == "\t":
        return len(value) - end + 1
    return len(value) - len(value[:end].rstrip(" "))


_EPOCH = re.compile(
    r"(1969-12-31|1970-01-01) ([0-2][0-9]):([0-5][0-9]):00(?:\.0+)?"
    r" ([-+])([0-2][0-9]):?([0-5][0-9])\Z"
)


def has_epoch_timestamp(value: str) -> bool:
    """The timestamp after the last TAB is the epoch: GNU diff's mark of a created/deleted file."""
    tab = value.rfind("\t")
    found = _EPOCH.match(value, tab + 1) if tab >= 0 else None
    if found is None:
        return False
    day, hour, minute, sign, zone_h, zone_m = found.groups()
    zone = int(zone_h) * 60 + int(zone_m)
    offset = -zone if sign == "-" else zone
    epoch = 24 * 60 if day == "1969-12-31" else 0
    return int(hour) * 60 + int(minute) - offset == epoch


def _skip_prefix(strip: int, name: str) -> int | None:
    """Index past `strip` leading components (Git's skip_tree_prefix); None if absolute/short."""
    if strip == 0:
        return None if name.startswith("/") else 0
    pos = -1
    for _ in range(strip):
        pos = name.find("/", pos + 1)
        if pos < 0:
            return None
    return None if pos == 0 else pos + 1


def git_header_name(rest: str, strip: int) -> str | None:
    """The name a `diff --git` line gives (after the keyword) when both sides agree, else None."""
    if rest.startswith('"'):
        return _quoted_first(rest, strip)
    if strip == 0 and '"' not in rest:  # then only two equal halves can give a name
        half = len(rest) // 2
        if len(rest) % 2 == 0 or rest[:half] != rest[half + 1 :]:
            return None
    start = _skip_prefix(strip, rest)
    if start is None:
        return None
    name = rest[start:]
    quote = name.find('"')
    if quote >= 0:
        try:
            second, _ = unquote_at(name, quote)
        except ValueError:
            return None
        cut = _skip_prefix(strip, second)
        if cut is None:
            return None
        second = second[cut:]
        size = len(second)
        if size < quote and name.startswith(second) and name[size] in SPACE:
            return second
        return None
    for i in _separators(name):
        if i + 1 == len(name):
            return None
        cut = _skip_prefix(strip, name[i + 1 :])
        if cut is None:
            return None  # Git 2.39 gives up here (later versions look further)
        if name[i + 1 + cut :] == name[:i]:
            return name[:i]
    return None


def _separators(name: str) -> Iterator[int]:
    """Positions of the spaces and TABs of `name`, in order."""
    if "\t" not in name:
        pos = name.find(" ")
        while pos >= 0:
            yield pos
            pos = name.find(" ", pos + 1)
        return
    yield from (i for i, char in enumerate(name) if char in " \t")


def _quoted_first(rest: str, strip: int) -> str | None:
    try:
        first, end = unquote_at(rest, 0)
    except ValueError:
        return None
    cut = _skip_prefix(strip, first)
    if cut is None:
        return None
    first = first[cut:]
    while end < len(rest) and rest[end] in SPACE:
        end += 1
    if end >= len(rest):
        return None
    if rest[end] == '"':
        try:
            second, _ = unquote_at(rest, end)
        except ValueError:
            return None
    else:
        second = rest[end:] + "\n"  # Git compares with the newline included: never equal
    cut = _skip_prefix(strip, second)
    if cut is None or second[cut:] != first:
        return None
    return first
