"""Git's C-style path quoting, read back into real names."""

from __future__ import annotations

_ESCAPES = {
    "a": 7,
    "b": 8,
    "t": 9,
    "n": 10,
    "v": 11,
    "f": 12,
    "r": 13,
    '"': 34,
    "\\": 92,
}
_OCTAL = frozenset("01234567")


def decode_path(raw: bytes) -> str:
    """Decode raw path bytes as UTF-8, keeping undecodable bytes as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def unquote_at(text: str, start: int) -> tuple[str, int]:
    """Read the quoted name starting at `text[start]` (a `"`); return it and the index past it.

    Raises ValueError on a bad escape or a missing closing quote.
    """
    out = bytearray()
    i = start + 1
    end = len(text)
    while i < end:
        char = text[i]
        if char == '"':
            return decode_path(bytes(out)), i + 1
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt and nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif len(text) >= i + 4 and all(c in _OCTAL for c in text[i + 1 : i + 4]):
            value = int(text[i + 1 : i + 4], 8)
            if value > 255:
                raise ValueError(f"bad octal escape in quoted name {text[start:]!r}")
            out.append(value)
            i += 4
        else:
            raise ValueError(f"bad escape in quoted name {text[start:]!r}")
    raise ValueError(f"unterminated quoted name {text[start:]!r}")


def unquote(text: str) -> str:
    """The real name of a whole quoted token (`"..."`); an unquoted token is returned as is."""
    if not text.startswith('"'):
        return text
    name, end = unquote_at(text, 0)
    if end != len(text):
        raise ValueError(f"unexpected text after quoted name {text!r}")
    return name
