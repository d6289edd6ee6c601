"""Character classes of glob patterns, read as git's wildmatch reads them."""

from __future__ import annotations

import string

from reviewflow.globs.braces import pattern_repr

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "".join("\\" + c if c in "\\]^-[" else c for c in string.punctuation),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


def char_class(segment: str, start: int, original: str) -> tuple[str, int]:
    """The class whose `[` precedes `start`, read as git's wildmatch does: `!`/`^` negates, a
    leading `]` is literal, `\\x` escapes, `a-z` ranges and `[:digit:]`-style names."""
    index, end = start, len(segment)
    negate = index < end and segment[index] in "!^"
    index += negate
    items: list[str] = []
    first = True
    while index < end and (segment[index] != "]" or first):
        first = False
        if segment.startswith("[:", index):
            close = segment.find(":]", index + 2)
            name = segment[index + 2 : close] if close != -1 else ""
            if name not in _POSIX_CLASSES:
                raise ValueError(f"invalid glob {pattern_repr(original)}: bad class [:{name}:]")
            items.append(_POSIX_CLASSES[name])
            index = close + 2
            continue
        char, index = _class_char(segment, index, original)
        if index + 1 < end and segment[index] == "-" and segment[index + 1] != "]":
            high, index = _class_char(segment, index + 1, original)
            if high < char:
                raise ValueError(f"invalid glob {pattern_repr(original)}: reversed range")
            items.append(f"{_class_escape(char)}-{_class_escape(high)}")
        else:
            items.append(_class_escape(char))
    if index >= end:
        raise ValueError(f"invalid glob {pattern_repr(original)}: unterminated character class")
    return "(?!/)[" + ("^" if negate else "") + "".join(items) + "]", index + 1


def _class_char(segment: str, index: int, original: str) -> tuple[str, int]:
    """One (possibly backslash-escaped) character of a class, and the index after it."""
    if segment[index] == "\\":
        if index + 1 >= len(segment):
            raise ValueError(f"invalid glob {pattern_repr(original)}: trailing backslash")
        return segment[index + 1], index + 2
    return segment[index], index + 1


def _class_escape(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char
