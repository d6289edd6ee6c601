"""Report language tags: well-formed BCP 47 (RFC 5646) naming a known language, script, region.

The codes are ISO 639-3 (with its 639-1 two-letter codes), ISO 15924 and ISO 3166-1 plus the
UN M.49 areas, shipped as data in `language_codes.json` (from Debian's iso-codes).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

_SUBTAG = re.compile(r"^[A-Za-z0-9]{1,8}$")
_VARIANT = re.compile(r"^(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3})$")


@cache
def _codes() -> dict[str, frozenset[str]]:
    data = json.loads((Path(__file__).parent / "language_codes.json").read_text("utf-8"))
    return {
        "languages": frozenset(data["languages"]),
        "scripts": frozenset(code.lower() for code in data["scripts"]),
        "regions": frozenset(code.lower() for code in data["regions"]),
    }


def is_known_tag(tag: str) -> bool:
    """True for a well-formed tag whose language, script and region subtags exist."""
    parts = tag.split("-")
    if not tag or not all(_SUBTAG.match(part) for part in parts):
        return False
    codes = _codes()
    language, rest = parts[0].lower(), [part.lower() for part in parts[1:]]
    if not (2 <= len(language) <= 3 and language.isalpha() and language in codes["languages"]):
        return False
    if rest and _is_script(rest[0]) and rest.pop(0) not in codes["scripts"]:
        return False
    if rest and _is_region(rest[0]) and rest.pop(0) not in codes["regions"]:
        return False
    return _tail_ok(rest)


def _is_script(subtag: str) -> bool:
    return len(subtag) == 4 and subtag.isalpha()


def _is_region(subtag: str) -> bool:
    return (len(subtag) == 2 and subtag.isalpha()) or (len(subtag) == 3 and subtag.isdigit())


def _tail_ok(rest: list[str]) -> bool:
    """Variants, then extensions (`u-...`), then private use (`x-...`), none repeated."""
    seen: set[str] = set()
    while rest and _VARIANT.match(rest[0]):
        variant = rest.pop(0)
        if variant in seen:
            return False
        seen.add(variant)
    while rest:
        singleton = rest.pop(0)
        if len(singleton) != 1 or singleton in seen:
            return False
        seen.add(singleton)
        size = 1 if singleton == "x" else 2
        taken = 0
        while rest and len(rest[0]) >= size and (singleton == "x" or len(rest[0]) > 1):
            rest.pop(0)
            taken += 1
        if taken == 0:
            return False
        if singleton == "x":
            return not rest
    return True
