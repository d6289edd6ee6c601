"""Text from repositories made safe to print and to store as UTF-8 JSON."""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def unsurrogate(text: str) -> str:
    """Bytes that were not UTF-8 (kept as surrogates) shown as `\\xNN` escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def for_terminal(text: str) -> str:
    """`text` with control characters (escape sequences, newlines) shown as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", unsurrogate(text))


def terminal_text(lines: list[str]) -> str:
    """Lines joined for the console, each escaped with `for_terminal`."""
    return "".join(for_terminal(line) + "\n" for line in lines)


def json_safe(value: Any) -> Any:
    """A copy of a JSON-able document whose strings all encode as UTF-8."""
    if isinstance(value, str):
        return unsurrogate(value)
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
