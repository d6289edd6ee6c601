"""File names in diff headers: `diff --git` tokens, `---`/`+++` lines, prefixes."""

from __future__ import annotations

from reviewflow.git.quoting import unquote, unquote_at

DEV_NULL = "/dev/null"
# Source and destination prefixes git may write: a/ b/, and the mnemonic c/ i/ o/ w/.
_SRC_PREFIXES = frozenset("acio")
_DST_PREFIXES = frozenset("bciw")


def _looks_prefixed(old: str, new: str) -> bool:
    return (
        old[1:2] == "/"
        and new[1:2] == "/"
        and old[0] in _SRC_PREFIXES
        and new[0] in _DST_PREFIXES
        and old[0] != new[0]
    )


def _split_unquoted(rest: str) -> tuple[str | None, str | None, bool]:
    """Split `OLD NEW` when both are unquoted (names may hold spaces)."""
    half = len(rest) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        left, right = rest[:half], rest[half + 1 :]
        if left == right:
            return left, right, False
        if _looks_prefixed(left, right) and left[2:] == right[2:]:
            return left[2:], right[2:], True
    # Different names (a rename or copy): the extended header names them; only guess prefixes.
    prefixed = rest[1:2] == "/" and rest[0] in _SRC_PREFIXES
    return None, None, prefixed


def split_git_header(rest: str) -> tuple[str | None, str | None, bool]:
    """Names of a `diff --git ` line (after the keyword): (old, new, prefixed).

    Names are None when they cannot be told apart (unquoted, different, with spaces).
    Raises ValueError on broken quoting.
    """
    if rest.startswith('"'):
        old, end = unquote_at(rest, 0)
        if rest[end : end + 1] != " ":
            raise ValueError("missing second name in 'diff --git' header")
        new = unquote(rest[end + 1 :])
        return _strip_pair(old, new)
    if rest.endswith('"'):
        pos = rest.find(' "')
        while pos >= 0:
            try:
                new, end = unquote_at(rest, pos + 1)
            except ValueError:
                end = -1
            if end == len(rest):
                return _strip_pair(rest[:pos], new)
            pos = rest.find(' "', pos + 1)
        raise ValueError("cannot split names in 'diff --git' header")
    return _split_unquoted(rest)


def _strip_pair(old: str, new: str) -> tuple[str, str, bool]:
    if old != new and _looks_prefixed(old, new):
        return old[2:], new[2:], True
    return old, new, False


def header_name(value: str) -> str | None:
    """The name in a `---`/`+++` line (after the marker), None for /dev/null.

    Git appends a TAB to names with spaces, `diff -u` a TAB and a timestamp: both are cut.
    """
    if value.startswith('"'):
        name, _ = unquote_at(value, 0)
    else:
        tab = value.find("\t")
        name = value if tab < 0 else value[:tab]
        if tab < 0:
            name = name.rstrip("\r")
    return None if name == DEV_NULL else name


def strip_prefix(name: str | None, prefixed: bool) -> str | None:
    """Drop the one-letter `x/` prefix of a header name when the diff has prefixes."""
    if name is None or not prefixed:
        return name
    return name[2:] if name[1:2] == "/" else name


def plain_names(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Names of a plain unified diff (no `diff --git` line), prefixes stripped like `patch -p1`."""
    if old is not None and new is not None:
        if old.startswith("a/") and new.startswith("b/"):
            return old[2:], new[2:]
        old_parts, new_parts = old.split("/", 1), new.split("/", 1)
        if (
            len(old_parts) == 2
            and len(new_parts) == 2
            and old_parts[0] != new_parts[0]
            and old_parts[1] == new_parts[1]
        ):
            return old_parts[1], new_parts[1]
        return old, new
    if old is not None and old.startswith("a/"):
        return old[2:], None
    if new is not None and new.startswith("b/"):
        return None, new[2:]
    return old, new


def binary_names(text: str) -> tuple[str | None, str | None]:
    """Names of a plain `Binary files X and Y differ` line (X, Y may be /dev/null)."""
    body = text[len("Binary files ") : -len(" differ")]
    candidates: list[tuple[str, str]] = []
    pos = body.find(" and ")
    while pos >= 0:
        candidates.append((body[:pos], body[pos + 5 :]))
        pos = body.find(" and ", pos + 1)
    if not candidates:
        raise ValueError("cannot read names in 'Binary files' line")
    for old, new in candidates:
        pair = plain_names(header_name(old), header_name(new))
        if pair[0] == pair[1] or None in pair:
            return pair
    old, new = candidates[0]
    return plain_names(header_name(old), header_name(new))
